"""The one service every face calls: `Memory`, its arguments checked once, its results."""
