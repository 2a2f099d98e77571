"""Tokenizing: words (words.py), mail (mail.py), and the Tokenizer that chooses (tokenizer.py)."""
