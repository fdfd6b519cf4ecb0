package dev.sluice;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.Objects;

/** Argument checks whose messages name the parameter and the value. */
final class Checks {
  private Checks() {}

  static double positiveFinite(String name, double value) {
    if (!(value > 0) || value == Double.POSITIVE_INFINITY) {
      throw new IllegalArgumentException(
          name + " must be positive and finite but was " + format(value));
    }
    return value;
  }

  static double cost(double cost) {
    if (!(cost > 0) || cost == Double.POSITIVE_INFINITY) {
      throw new IllegalArgumentException("cost must be positive and finite but was " + format(cost));
    }
    return cost;
  }

  static String key(String key) {
    Objects.requireNonNull(key, "key");
    if (key.isEmpty()) {
      throw new IllegalArgumentException("key must not be empty");
    }
    return key;
  }

  static Duration nonNegative(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative()) {
      throw new IllegalArgumentException(name + " must not be negative but was " + value);
    }
    return value;
  }

  static Duration positive(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be positive but was " + value);
    }
    return value;
  }

  /** Formats a number without a trailing ".0" and without exponent for ordinary values. */
  static String format(double value) {
    if (Double.isNaN(value) || Double.isInfinite(value)) {
      return Double.toString(value);
    }
    if (value == Math.rint(value) && Math.abs(value) < 1e15) {
      return Long.toString((long) value);
    }
    return BigDecimal.valueOf(value).stripTrailingZeros().toPlainString();
  }
}
