"""The test session's plan (run each chapter once, build the book from those
runs, then test the pages) is the plugin ``tests/book_session.py``."""

pytest_plugins = ["book_session"]
