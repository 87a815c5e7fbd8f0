# -*- Python -*-
# lit configuration of the GoogleTest unit tests: every test of every *Tests
# executable built in build/test/unit is one lit test.

import os

import lit.formats

config.name = "GA-Unit"
config.test_exec_root = os.path.join(config.ga_obj_root, "test", "unit")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
