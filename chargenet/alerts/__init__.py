"""Alerts for operators: the rules' conditions read from the store, the worker that raises and clears alerts, and
the mailer that sends them through each company's SMTP server (docs/alerts.md)."""
