"""Health, metrics and logs: how operators see that chargenet does its job."""
