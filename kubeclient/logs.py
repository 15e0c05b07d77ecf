"""How every spacehub process logs (hub, simulator, syncer): text lines for people, or one JSON object per line
for log collectors (``--log-format json``), at ``--log-level``; uvicorn's loggers go the same way."""

from __future__ import annotations

import argparse
import datetime as dt
import logging

import orjson

FORMATS = ("text", "json")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def add_log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-format", choices=FORMATS, default="text",
                        help="text lines, or one JSON object per line (time, level, logger, msg; default text)")
    parser.add_argument("--log-level", choices=LEVELS, default="INFO", help="the least severe level logged")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
                 "level": record.levelname, "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry).decode()


def configure_logging(log_format: str = "text", level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # no handlers of their own: through the root
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
