package dev.sluice.servlet;

import dev.sluice.internal.ClientAddress;
import dev.sluice.internal.RequestKeys;
import java.security.Principal;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;

/**
 * The usual {@link KeyResolver}s.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/server.md#the-servlet-filter">docs/server.md, "The servlet filter"</a>.
 */
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
    ClientAddress resolver = ClientAddress.trusting(trustedProxies, ipv6PrefixBits);
    return request -> RequestKeys.ip(resolver.clientKey(request.getRemoteAddr(),
        name -> {
          Enumeration<String> values = request.getHeaders(name);
          return values == null ? List.of() : Collections.list(values);
        }));
  }

  /** The value of a request header (such as an API key), or null when absent or blank. */
  public static KeyResolver header(String name) {
    RequestKeys.headerName(name);
    return request -> RequestKeys.header(name, request.getHeader(name));
  }

  /** The authenticated principal's name, or null for an anonymous request. */
  public static KeyResolver principal() {
    return request -> {
      Principal p = request.getUserPrincipal();
      return p == null ? null : RequestKeys.user(p.getName());
    };
  }

  /**
   * The character between a group and a member in a {@link #inGroup grouped key}: U+001F, the
   * ASCII unit separator, which no HTTP header value or address holds.
   */
  public static final char GROUP_SEPARATOR = RequestKeys.GROUP_SEPARATOR;

  /**
   * A key for a {@link dev.sluice.Group group} limiter: the group (a tenant from a header, say)
   * and the member within it (the client's address), joined by {@link #GROUP_SEPARATOR}; null
   * when either is null. Build the limiter's group with {@code .by(Keys::groupOf)}.
   *
   * <pre>{@code
   * RateLimiter tenants = Sluice.builder().group(Group.sharing(tenantLimit)
   *     .assured(perClient).ceiling(perClientMost).by(Keys::groupOf)).build();
   * Rule.path("/api/**").limiter(tenants)
   *     .key(Keys.inGroup(Keys.header("X-Tenant"), Keys.clientIp())).build();
   * }</pre>
   */
  public static KeyResolver inGroup(KeyResolver group, KeyResolver member) {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(member, "member");
    return request -> {
      String g = group.key(request);
      return g == null ? null : RequestKeys.inGroup(g, member.key(request));
    };
  }

  /**
   * The group of a key made by {@link #inGroup}: what comes before the first
   * {@link #GROUP_SEPARATOR}.
   *
   * @throws IllegalArgumentException if the key has no separator (it was not made by inGroup)
   */
  public static String groupOf(String key) {
    return RequestKeys.groupOf(key);
  }
}
