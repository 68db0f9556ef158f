"""Puts this folder on ``sys.path`` for ``random_problems`` (as pytest does for a test folder's
``conftest.py``)."""
