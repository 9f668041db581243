"""Websites as sources: a crawl of pages under a start URL into a mirror folder, refreshed
by conditional requests, behind an address policy that keeps it off private networks."""
