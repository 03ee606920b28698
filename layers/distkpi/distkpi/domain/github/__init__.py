"""What GitHub sends and is told: deliveries, trust, commit statuses, check runs, alerts."""
