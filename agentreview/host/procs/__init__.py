"""Child processes of the host: each in its own process group, bounded, and never outliving the host.

Empty on purpose: the watchdog process imports this package and must start quickly.
"""
