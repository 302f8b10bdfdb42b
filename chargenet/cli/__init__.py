"""The `chargenet` command: serve, migrate, demo and the `admin` family."""
