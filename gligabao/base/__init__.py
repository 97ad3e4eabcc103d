"""Ground helpers that import nothing of gligabao but its errors: times, JSON lines, quotes
located in text, line numbers, secrets masked, the collector paused while modules load."""
