"""What a chat is told: Slack messages (Block Kit) of alerts, and the per-suite rate limit."""
