"""`nbtext serve`: a filter daemon mail servers talk to (docs/serve.md).

    command   the click command (options only: importing it starts nothing)
    address   listener addresses (HOST:PORT, unix:PATH), --allow networks, sizes
    scoring   a model file as the daemon scores with it: nbtext.fastscore's scorer, its tokens
              counted by the kernel and found through a key index, its weights kept
    models    the models in use (the global one, users'), reloaded when their file changes,
              and learning through nbtext.operations (one lock, load and save for a batch)
    spamd     SpamAssassin's spamd protocol (SPAMC/1.x): requests in, replies out
    http      HTTP/JSON: rspamd's /checkv2, learn and forget, /ping, /metrics
    metrics   counters shared by the workers, in Prometheus' text format
    server    the workers' event loops and the supervising parent

Nothing here is imported by `nbtext classify`.
"""
