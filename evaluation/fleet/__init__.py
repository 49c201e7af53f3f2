"""The worker fleet: each worker's heartbeat, what operators read of it (the workers page, its API,
/metrics), and how many hosts a run's trials ran on."""
