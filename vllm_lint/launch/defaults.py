"""The values the launch rules judge by and the fixes write: one place, so a fix never writes what a rule reports."""

SAFE_GPU_MEMORY_UTILIZATION = 0.90
MAX_GPU_MEMORY_UTILIZATION = 0.95
