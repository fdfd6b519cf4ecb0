package dev.sluice.internal;

import java.util.Objects;

/**
 * The keys every shared store accepts: non-empty, well-formed Unicode (a lone surrogate would
 * reach Redis and PostgreSQL as {@code ?} and share a bucket with other keys), without U+0000
 * (PostgreSQL text cannot hold it), at most {@value #MAX_UTF8_BYTES} bytes of UTF-8 (PostgreSQL
 * indexes them). Store-backed limiters refuse other keys before calling the store, so bad input
 * is the caller's error and never counts as a store failure.
 */
public final class StoreKeys {
  /** The longest key, in bytes of UTF-8. */
  public static final int MAX_UTF8_BYTES = 1024;

  private StoreKeys() {}

  /**
   * What is wrong with {@code key} for a shared store, as the end of a sentence that starts with
   * "key " (e.g. {@code must not contain U+0000 but was "a\u0000b"}), or null if nothing.
   */
  public static String problem(String key) {
    if (key == null) {
      return "must not be null";
    }
    if (key.isEmpty()) {
      return "must not be empty";
    }
    int bytes = 0;
    for (int i = 0; i < key.length(); i++) {
      char c = key.charAt(i);
      if (c < 0x80) {
        if (c == 0) {
          return "must not contain U+0000 but was " + shown(key);
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
          return "must be well-formed Unicode but has a lone surrogate at index " + i + ": "
              + shown(key);
        }
      } else {
        bytes += 3;
      }
    }
    if (bytes > MAX_UTF8_BYTES) {
      return "must be at most " + MAX_UTF8_BYTES + " bytes of UTF-8 for a shared store but was "
          + bytes + " bytes: " + shown(key);
    }
    return null;
  }

  /**
   * Returns {@code key} if a shared store accepts it.
   *
   * @throws NullPointerException if key is null
   * @throws IllegalArgumentException saying what is wrong with it, naming the key
   */
  public static String check(String key) {
    Objects.requireNonNull(key, "key");
    String problem = problem(key);
    if (problem != null) {
      throw new IllegalArgumentException("key " + problem);
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
}
