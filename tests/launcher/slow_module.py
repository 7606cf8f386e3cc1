"""A module whose import takes ELASTIC_TEST_SLOW_IMPORT_S seconds (test_preload.py):
a preloaded torch on a slow shared file system."""
import os
import time

time.sleep(float(os.environ.get("ELASTIC_TEST_SLOW_IMPORT_S", "0")))
