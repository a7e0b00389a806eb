"""The browser's fixtures (``site``, ``browser``, ``opened``) for every test;
the session's plan and the book's fixtures are ``book_session.py``'s."""

from browsing import browser, opened, site  # noqa: F401 (fixtures)
