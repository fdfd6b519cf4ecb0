package dev.sluice.grpc;

import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Locale;
import java.util.Objects;

/**
 * Which key a call is limited by: the method, the service, the peer's address, a metadata
 * value, one key for every call, or your own. A key that is null (a missing metadata value)
 * leaves the call out of that rule.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/grpc.md#the-server-interceptor">docs/grpc.md, "The server interceptor"</a>.
 */
@FunctionalInterface
public interface GrpcKey {
  /** The call's key, or null when the rule does not apply to it. */
  String key(ServerCall<?, ?> call, Metadata headers);

  /** The full method name, such as {@code shop.Orders/Place}. */
  static GrpcKey method() {
    return (call, headers) -> call.getMethodDescriptor().getFullMethodName();
  }

  /** The service name, such as {@code shop.Orders}. */
  static GrpcKey service() {
    return (call, headers) -> call.getMethodDescriptor().getServiceName();
  }

  /** {@code ip:<address>} of the peer (the transport's remote address), or null without one. */
  static GrpcKey peer() {
    return (call, headers) -> {
      SocketAddress a = call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
      if (a instanceof InetSocketAddress i) {
        return "ip:" + (i.getAddress() != null ? i.getAddress().getHostAddress()
            : i.getHostString());
      }
      return a == null ? null : "ip:" + a;
    };
  }

  /** {@code <name>:<value>} of an ASCII metadata value, or null when the call has none. */
  static GrpcKey metadata(String name) {
    String lower = Objects.requireNonNull(name, "name").toLowerCase(Locale.ROOT);
    if (lower.endsWith(Metadata.BINARY_HEADER_SUFFIX) || lower.isBlank()) {
      throw new IllegalArgumentException("a key's metadata must be an ASCII key (not -bin) but"
          + " was '" + name + "'");
    }
    Metadata.Key<String> k = Metadata.Key.of(lower, Metadata.ASCII_STRING_MARSHALLER);
    return (call, headers) -> {
      String v = headers.get(k);
      return v == null || v.isBlank() ? null : lower + ":" + v.trim();
    };
  }

  /** The same key for every call: one limit shared by all. */
  static GrpcKey global(String key) {
    Objects.requireNonNull(key, "key");
    return (call, headers) -> key;
  }
}
