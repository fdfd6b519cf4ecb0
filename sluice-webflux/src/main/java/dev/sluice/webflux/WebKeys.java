package dev.sluice.webflux;

import dev.sluice.internal.ClientAddress;
import dev.sluice.internal.RequestKeys;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;
import reactor.core.publisher.Mono;

/**
 * The usual {@link WebKeyResolver}s; they spell keys as the servlet filter's
 * {@code dev.sluice.servlet.Keys} do ({@link RequestKeys}), so one client has one key on both.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/spring.md#webflux">docs/spring.md, "WebFlux"</a>.
 */
public final class WebKeys {
  private WebKeys() {}

  /**
   * The client's address as the connection shows it, ignoring {@code Forwarded} and
   * {@code X-Forwarded-For} (no proxy is trusted); IPv6 addresses grouped by /64.
   */
  public static WebKeyResolver clientIp() {
    return clientIp(List.of(), 64);
  }

  /**
   * The client's address: taken from {@code Forwarded} (or else {@code X-Forwarded-For}) only when
   * the connection comes from one of {@code trustedProxies}, walking back through trusted hops;
   * IPv6 addresses grouped by their first {@code ipv6PrefixBits} bits. See {@link ClientAddress}.
   *
   * @throws IllegalArgumentException naming a block that is not an IP literal or CIDR block
   */
  public static WebKeyResolver clientIp(List<String> trustedProxies, int ipv6PrefixBits) {
    ClientAddress resolver = ClientAddress.trusting(trustedProxies, ipv6PrefixBits);
    return exchange -> {
      InetSocketAddress remote = exchange.getRequest().getRemoteAddress();
      if (remote == null) {
        return Mono.empty();
      }
      String address = remote.getAddress() != null ? remote.getAddress().getHostAddress()
          : remote.getHostString();
      return Mono.just(RequestKeys.ip(resolver.clientKey(address,
          name -> exchange.getRequest().getHeaders().getOrEmpty(name))));
    };
  }

  /** The value of a request header (such as an API key); empty when absent or blank. */
  public static WebKeyResolver header(String name) {
    RequestKeys.headerName(name);
    return exchange -> Mono.justOrEmpty(
        RequestKeys.header(name, exchange.getRequest().getHeaders().getFirst(name)));
  }

  /** The authenticated principal's name; empty for an anonymous request. */
  public static WebKeyResolver principal() {
    return exchange -> exchange.getPrincipal()
        .flatMap(p -> Mono.justOrEmpty(RequestKeys.user(p.getName())));
  }

  /**
   * A key for a {@link dev.sluice.Group group} limiter: the group and the member within it joined
   * by {@link RequestKeys#GROUP_SEPARATOR}; empty when either is. Build the limiter's group with
   * {@code .by(RequestKeys::groupOf)}.
   */
  public static WebKeyResolver inGroup(WebKeyResolver group, WebKeyResolver member) {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(member, "member");
    return exchange -> group.key(exchange)
        .flatMap(g -> member.key(exchange).map(m -> RequestKeys.inGroup(g, m)));
  }
}
