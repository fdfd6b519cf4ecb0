package dev.sluice.health;

import java.util.Objects;
import java.util.function.DoubleSupplier;

/**
 * One reading of the backend's health: a small gauge a {@link HealthShedder} compares with its
 * thresholds (a CPU's utilization from 0 to 1, a pool's, the GC's share of time, an event loop's
 * lag in milliseconds, anything a {@link DoubleSupplier} reads). {@link Signals} has the built-in
 * ones. A reading that is not a number ({@code NaN}: not known yet, not available here) counts as
 * healthy. Implementations must be thread-safe; the shedder reads each signal from one thread at
 * a time, at most once per its sampling interval.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/health.md#which-signal">docs/health.md, "Which signal"</a>.
 */
public interface HealthSignal {
  /** The signal's name, as refusals and meters say it ({@code cpu}, {@code pool.orders}). */
  String name();

  /** The signal's value now; {@code NaN} if it cannot be read. */
  double read();

  /**
   * A signal read from {@code value}; a supplier that throws reads as {@code NaN}.
   *
   * @throws IllegalArgumentException if the name is blank
   */
  static HealthSignal of(String name, DoubleSupplier value) {
    String checked = Signals.checkName(name);
    Objects.requireNonNull(value, "value");
    return new HealthSignal() {
      @Override
      public String name() {
        return checked;
      }

      @Override
      public double read() {
        try {
          return value.getAsDouble();
        } catch (RuntimeException e) {
          return Double.NaN;
        }
      }

      @Override
      public String toString() {
        return checked;
      }
    };
  }
}
