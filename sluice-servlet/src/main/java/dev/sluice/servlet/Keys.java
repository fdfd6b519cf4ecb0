package dev.sluice.servlet;

import java.security.Principal;
import java.util.List;
import java.util.Objects;

/** The usual {@link KeyResolver}s. */
public final class Keys {
  private Keys() {}

  /**
   * The client's address as the connection shows it, ignoring {@code Forwarded} and
   * {@code X-Forwarded-For} (no proxy is trusted); IPv6 addresses grouped by /64.
   */
  public static KeyResolver clientIp() {
    return clientIp(List.of(), 64);
  }

  /**
   * The client's address: taken from {@code Forwarded} (or else {@code X-Forwarded-For}) only when
   * the connection comes from one of {@code trustedProxies} (CIDR blocks such as
   * {@code 10.0.0.0/8} or single addresses), walking back through trusted hops; IPv6 addresses
   * grouped by their first {@code ipv6PrefixBits} bits (a /64 is usually one subscriber).
   *
   * @throws IllegalArgumentException naming a block that is not an IP literal or CIDR block
   */
  public static KeyResolver clientIp(List<String> trustedProxies, int ipv6PrefixBits) {
    ClientAddress resolver = new ClientAddress(trustedProxies, ipv6PrefixBits);
    return request -> "ip:" + resolver.clientKey(request);
  }

  /** The value of a request header (such as an API key), or null when absent or blank. */
  public static KeyResolver header(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isBlank()) {
      throw new IllegalArgumentException("header name must not be blank");
    }
    return request -> {
      String v = request.getHeader(name);
      return v == null || v.isBlank() ? null : name.toLowerCase(java.util.Locale.ROOT) + ":" + v.trim();
    };
  }

  /** The authenticated principal's name, or null for an anonymous request. */
  public static KeyResolver principal() {
    return request -> {
      Principal p = request.getUserPrincipal();
      return p == null || p.getName() == null ? null : "user:" + p.getName();
    };
  }
}
