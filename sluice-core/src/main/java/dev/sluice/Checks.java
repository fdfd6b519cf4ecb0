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

  /** The longest key a shared store accepts, in bytes of UTF-8 (PostgreSQL indexes them). */
  static final int MAX_STORE_KEY_BYTES = 1024;

  /**
   * A key for a shared store: non-empty, well-formed Unicode (a lone surrogate would reach Redis
   * and PostgreSQL as '?' and share a bucket with other keys), no U+0000 (PostgreSQL text cannot
   * hold it), at most {@value #MAX_STORE_KEY_BYTES} bytes of UTF-8. Refused here, before the
   * store, so that bad input is the caller's error and never counts as a store failure.
   */
  static String storeKey(String key) {
    key(key);
    int bytes = 0;
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x80) {
        if (c == 0) {
          throw new IllegalArgumentException("key must not contain U+0000 but was " + shown(key));
        }
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (Character.isSurrogate(c)) {
        if (Character.isHighSurrogate(c) && i + 1 < key.length()
            && Character.isLowSurrogate(key.charAt(i + 1))) {
          bytes += 4;
          i++;
        } else {
          throw new IllegalArgumentException("key must be well-formed Unicode but has a lone"
              + " surrogate at index " + i + ": " + shown(key));
        }
      } else {
        bytes += 3;
      }
    }
    if (bytes > MAX_STORE_KEY_BYTES) {
      throw new IllegalArgumentException("key must be at most " + MAX_STORE_KEY_BYTES
          + " bytes of UTF-8 for a shared store but was " + bytes + " bytes: " + shown(key));
    }
    return key;
  }

  /** A key as a message shows it: quoted, escaped, cut after 64 characters. */
  private static String shown(String key) {
    StringBuilder b = new StringBuilder("\"");
    int n = Math.min(key.length(), 64);
    for (int i = 0; i < n; i++) {
      char c = key.charAt(i);
      if (c < 0x20 || c == 0x7f || Character.isSurrogate(c) || c == '"' || c == '\\') {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    return b.append(key.length() > n ? "\"..." : "\"").toString();
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
