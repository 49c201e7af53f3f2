"""The project's own user model (`accounts.User`), in place from the first migration so that fields
can be added later without Django's swap-the-user-model-mid-project surgery."""
