"""knowhub's test suite.

Imported before any test module or conftest, so this is where the test process's own
environment is set, before anything imports grpc (pymilvus and chromadb do, in-process).
"""

import os

# gRPC's C core otherwise restarts its poller thread in every child forked for a
# `preexec_fn` or a pexpect terminal, and that thread dies on the descriptors the child
# closes before exec: a test's server then "exited -6" (or -11) before it ran, about once
# in a hundred forks.
os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "false"
