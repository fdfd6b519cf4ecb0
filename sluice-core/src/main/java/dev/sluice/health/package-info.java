/**
 * Shedding by the backend's health: {@link dev.sluice.health.HealthShedder} refuses work by
 * priority as {@link dev.sluice.health.HealthSignal}s (the CPU, a pool, the heap, the GC: {@link
 * dev.sluice.health.Signals}) pass their thresholds ({@code docs/health.md}).
 */
package dev.sluice.health;
