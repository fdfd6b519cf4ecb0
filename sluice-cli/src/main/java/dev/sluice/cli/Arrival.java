package dev.sluice.cli;

/** One request of the simulated traffic: when it arrives (ns from time 0) and what it costs. */
record Arrival(long nanos, double cost) {}
