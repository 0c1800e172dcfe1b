// In a file of its own so the compiler cannot fold the test's constants into the probe.
float probeMultiplyAdd(float a, float b, float c) { return a * b + c; }
