/**
 * JMH benchmarks and load harnesses measuring Sluice against its peers; results and commands are
 * in {@code docs/benchmarks.md}. Not published.
 */
package dev.sluice.benchmarks;
