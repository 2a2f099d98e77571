"""Naive Bayes: the counts (the state), the estimators and their formulas, calibration and
decisions."""
