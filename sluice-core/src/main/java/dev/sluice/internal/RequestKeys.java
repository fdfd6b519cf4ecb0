package dev.sluice.internal;

import java.util.Locale;

/**
 * How HTTP filters spell their keys, so that the servlet filter, the WebFlux filter and the
 * Spring Boot starter put the same client under the same key: {@code ip:192.0.2.1},
 * {@code x-api-key:abc}, {@code user:alice}, and a group and its member joined by
 * {@link #GROUP_SEPARATOR}.
 */
public final class RequestKeys {
  /**
   * The character between a group and a member in a grouped key: U+001F, the ASCII unit
   * separator, which no HTTP header value or address holds.
   */
  public static final char GROUP_SEPARATOR = '\u001f';

  private RequestKeys() {}

  /** {@code ip:<address>} (an address or IPv6 prefix from {@link ClientAddress}). */
  public static String ip(String clientKey) {
    return "ip:" + clientKey;
  }

  /** {@code <header name in lower case>:<value trimmed>}, or null when the value is absent or blank. */
  public static String header(String name, String value) {
    return value == null || value.isBlank() ? null
        : name.toLowerCase(Locale.ROOT) + ":" + value.trim();
  }

  /** {@code user:<name>}, or null for an anonymous request. */
  public static String user(String principalName) {
    return principalName == null ? null : "user:" + principalName;
  }

  /** The group and the member joined by {@link #GROUP_SEPARATOR}; null when either is null. */
  public static String inGroup(String group, String member) {
    return group == null || member == null ? null
        : group.replace(GROUP_SEPARATOR, ' ') + GROUP_SEPARATOR + member;
  }

  /**
   * The group of a key made by {@link #inGroup}: what comes before the first
   * {@link #GROUP_SEPARATOR}.
   *
   * @throws IllegalArgumentException if the key has no separator (it was not made by inGroup)
   */
  public static String groupOf(String key) {
    int at = key.indexOf(GROUP_SEPARATOR);
    if (at <= 0) {
      throw new IllegalArgumentException("key \"" + key + "\" has no group: make it with"
          + " inGroup(group, member)");
    }
    return key.substring(0, at);
  }

  /**
   * Checks a header name given in configuration.
   *
   * @throws IllegalArgumentException naming it when it is blank or not an HTTP token
   */
  public static String headerName(String name) {
    if (name == null || !name.matches("[!#$%&'*+.^_`|~0-9A-Za-z-]+")) {
      throw new IllegalArgumentException("not an HTTP header name: "
          + (name == null ? "null" : "'" + name + "'"));
    }
    return name;
  }
}
