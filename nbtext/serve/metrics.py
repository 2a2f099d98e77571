"""Counters the workers share, read out in Prometheus' text format (GET /metrics).

The parent maps one anonymous shared page per worker before it forks them; each worker adds to
its own row only (no lock: one writer a row), and /metrics, answered by whichever worker the
request reaches, sums the rows. A worker started again after a crash takes its row over, so
counters only grow.
"""
from __future__ import annotations

import mmap

SPAMD = ("PING", "CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS", "SKIP", "TELL")
HTTP = ("checkv2", "learnspam", "learnham", "forget", "ping", "metrics")
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)
ERRORS = ("refused", "malformed", "too_big", "timeout", "internal")
VERDICTS = ("spam", "ham", "unsure")
LEARNS = ("spam", "ham", "forget", "already", "refused", "failed")

NAMES = ([f"requests:spamd:{m}" for m in SPAMD] + [f"requests:http:{m}" for m in HTTP]
         + [f"errors:{e}" for e in ERRORS] + [f"bucket:{i}" for i in range(len(BUCKETS))]
         + ["latency_count", "latency_us"] + [f"verdict:{v}" for v in VERDICTS]
         + [f"learn:{x}" for x in LEARNS] + ["model_loads", "models_loaded", "connections"])
SLOT = {name: i for i, name in enumerate(NAMES)}
ROW = 8 * len(NAMES)


class Metrics:
    def __init__(self, workers: int):
        self.workers = workers
        self.map = mmap.mmap(-1, max(ROW * workers, 1))
        self.view = memoryview(self.map).cast("q")
        self.row = 0

    def use_row(self, worker: int) -> None:
        self.row = worker * len(NAMES)

    def add(self, name: str, n: int = 1) -> None:
        self.view[self.row + SLOT[name]] += n

    def set(self, name: str, n: int) -> None:
        self.view[self.row + SLOT[name]] = n

    def observe(self, seconds: float) -> None:
        for i, edge in enumerate(BUCKETS):
            if seconds <= edge:
                self.add(f"bucket:{i}")
                break
        self.add("latency_count")
        self.add("latency_us", int(seconds * 1e6))

    def total(self, name: str) -> int:
        i = SLOT[name]
        return sum(self.view[w * len(NAMES) + i] for w in range(self.workers))

    def text(self) -> str:
        """Every metric summed over the workers, in Prometheus' text exposition format."""
        t = self.total
        out = ["# HELP nbtext_requests_total Requests answered, by protocol and method.",
               "# TYPE nbtext_requests_total counter"]
        out += [f'nbtext_requests_total{{protocol="spamd",method="{m}"}} {t(f"requests:spamd:{m}")}' for m in SPAMD]
        out += [f'nbtext_requests_total{{protocol="http",method="{m}"}} {t(f"requests:http:{m}")}' for m in HTTP]
        out += ["# HELP nbtext_request_errors_total Requests refused or failed, by reason.",
                "# TYPE nbtext_request_errors_total counter"]
        out += [f'nbtext_request_errors_total{{reason="{e}"}} {t(f"errors:{e}")}' for e in ERRORS]
        out += ["# HELP nbtext_request_duration_seconds Time from a request's first byte to its reply.",
                "# TYPE nbtext_request_duration_seconds histogram"]
        cumulative = 0
        for i, edge in enumerate(BUCKETS):
            cumulative += t(f"bucket:{i}")
            out.append(f'nbtext_request_duration_seconds_bucket{{le="{edge:g}"}} {cumulative}')
        out.append(f'nbtext_request_duration_seconds_bucket{{le="+Inf"}} {t("latency_count")}')
        out.append(f'nbtext_request_duration_seconds_sum {t("latency_us") / 1e6:.6f}')
        out.append(f'nbtext_request_duration_seconds_count {t("latency_count")}')
        out += ["# HELP nbtext_verdicts_total Messages scored, by verdict.", "# TYPE nbtext_verdicts_total counter"]
        out += [f'nbtext_verdicts_total{{verdict="{v}"}} {t(f"verdict:{v}")}' for v in VERDICTS]
        out += ["# HELP nbtext_learns_total Learn and forget requests, by outcome (already: learned or "
                "forgotten before; refused: forget of a message never learned; failed: the model file could not "
                "be locked, read or written).",
                "# TYPE nbtext_learns_total counter"]
        out += [f'nbtext_learns_total{{outcome="{x}"}} {t(f"learn:{x}")}' for x in LEARNS]
        out += ["# HELP nbtext_model_loads_total Model files read (at start, and when a file changed).",
                "# TYPE nbtext_model_loads_total counter", f"nbtext_model_loads_total {t('model_loads')}",
                "# HELP nbtext_models_loaded Models held in memory, summed over the workers.",
                "# TYPE nbtext_models_loaded gauge", f"nbtext_models_loaded {t('models_loaded')}",
                "# HELP nbtext_connections Open client connections.",
                "# TYPE nbtext_connections gauge", f"nbtext_connections {t('connections')}",
                "# HELP nbtext_workers Worker processes.", "# TYPE nbtext_workers gauge",
                f"nbtext_workers {self.workers}"]
        return "\n".join(out) + "\n"
