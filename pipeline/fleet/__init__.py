"""Many runs: a batch in one process, and the queue's enqueue and workers across machines."""
