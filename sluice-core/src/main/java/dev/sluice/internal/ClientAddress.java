package dev.sluice.internal;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * Finds the client address of an HTTP request behind trusted proxies, without DNS: only IP
 * literals are ever parsed. {@code Forwarded} (else {@code X-Forwarded-For}) is read only when the
 * connection comes from a trusted proxy, walking back through trusted hops; IPv6 addresses are
 * grouped by a prefix (a /64 is usually one subscriber). Framework-free, so the servlet filter and
 * the WebFlux filter key clients the same way.
 *
 * <pre>{@code
 * ClientAddress resolver = ClientAddress.trusting(List.of("10.0.0.0/8"), 64);
 * String key = resolver.clientKey(request.getRemoteAddr(), name -> headerValues(request, name));
 * }</pre>
 */
public final class ClientAddress {
  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("[0-9a-fA-F:.]+(%[0-9a-zA-Z]+)?");

  private final List<byte[]> networks = new ArrayList<>();
  private final List<Integer> prefixes = new ArrayList<>();
  private final int ipv6PrefixBits;

  /**
   * A resolver that trusts {@code trustedProxies} (CIDR blocks such as {@code 10.0.0.0/8} or
   * single addresses) and groups IPv6 clients by their first {@code ipv6PrefixBits} bits.
   *
   * @throws IllegalArgumentException naming a block that is not an IP literal or CIDR block, or
   *     a prefix outside 1 to 128
   */
  public static ClientAddress trusting(List<String> trustedProxies, int ipv6PrefixBits) {
    return new ClientAddress(trustedProxies, ipv6PrefixBits);
  }

  private ClientAddress(List<String> trustedProxies, int ipv6PrefixBits) {
    if (ipv6PrefixBits < 1 || ipv6PrefixBits > 128) {
      throw new IllegalArgumentException("ipv6PrefixBits must be between 1 and 128 but was "
          + ipv6PrefixBits);
    }
    this.ipv6PrefixBits = ipv6PrefixBits;
    for (String block : trustedProxies) {
      String b = block == null ? "" : block.trim();
      int slash = b.indexOf('/');
      InetAddress a = literal(slash < 0 ? b : b.substring(0, slash));
      int bits = a == null ? -1 : a.getAddress().length * 8;
      if (a != null && slash >= 0) {
        try {
          int p = Integer.parseInt(b.substring(slash + 1));
          bits = p >= 0 && p <= bits ? p : -1;
        } catch (NumberFormatException e) {
          bits = -1;
        }
      }
      if (a == null || bits < 0) {
        throw new IllegalArgumentException("a trusted proxy must be an IP address or a CIDR block"
            + " such as 10.0.0.0/8 but was '" + block + "'");
      }
      networks.add(a.getAddress());
      prefixes.add(bits);
    }
  }

  /**
   * The client's address as a key: an IPv4 address, or an IPv6 prefix such as
   * {@code 2001:db8::/64}.
   *
   * @param remoteAddress the address of the connection's peer
   * @param headers every value of a request header by name (empty or null when absent)
   */
  public String clientKey(String remoteAddress, Function<String, ? extends Iterable<String>> headers) {
    if (networks.isEmpty() && canonicalIpv4(remoteAddress)) {
      return remoteAddress;   // no proxy to believe, nothing to group: the address as it is
    }
    InetAddress remote = literal(remoteAddress);
    if (remote == null) {
      return remoteAddress;
    }
    InetAddress client = remote;
    if (trusted(remote)) {
      List<String> hops = forwardedHops(headers);
      for (int i = hops.size() - 1; i >= 0; i--) {
        InetAddress hop = literal(hops.get(i));
        if (hop == null) {
          break;   // unknown or obfuscated: stop at the last address we could trust
        }
        client = hop;
        if (!trusted(hop)) {
          break;
        }
      }
    }
    return format(client);
  }

  // an empty element names no hop: split dropping trailing ones is what is meant
  @SuppressWarnings("StringSplitter")
  private static List<String> forwardedHops(Function<String, ? extends Iterable<String>> headers) {
    List<String> hops = new ArrayList<>();
    Iterable<String> forwarded = headers.apply("Forwarded");
    for (String value : forwarded == null ? List.<String>of() : forwarded) {
      for (String element : value.split(",")) {
        for (String pair : element.split(";")) {
          String p = pair.trim();
          if (p.regionMatches(true, 0, "for=", 0, 4)) {
            hops.add(stripForwardedFor(p.substring(4).trim()));
          }
        }
      }
    }
    if (!hops.isEmpty()) {
      return hops;
    }
    Iterable<String> xff = headers.apply("X-Forwarded-For");
    for (String value : xff == null ? List.<String>of() : xff) {
      for (String h : value.split(",")) {
        hops.add(h.trim());
      }
    }
    return hops;
  }

  /** {@code "[2001:db8::1]:4711"} → {@code 2001:db8::1}; {@code 192.0.2.1:80} → {@code 192.0.2.1}. */
  private static String stripForwardedFor(String v) {
    String s = v;
    if (s.startsWith("\"") && s.endsWith("\"") && s.length() >= 2) {
      s = s.substring(1, s.length() - 1);
    }
    if (s.startsWith("[")) {
      int end = s.indexOf(']');
      return end > 0 ? s.substring(1, end) : s;
    }
    int colon = s.indexOf(':');
    return colon > 0 && s.indexOf(':', colon + 1) < 0 ? s.substring(0, colon) : s;
  }

  /** Whether {@code s} is an IPv4 address written as {@link InetAddress#getHostAddress} writes it. */
  static boolean canonicalIpv4(String s) {
    if (s == null) {
      return false;
    }
    int n = s.length();
    int parts = 0;
    int i = 0;
    while (i < n) {
      int start = i;
      int value = 0;
      while (i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9' && i - start < 3) {
        value = value * 10 + (s.charAt(i) - '0');
        i++;
      }
      int digits = i - start;
      if (digits == 0 || value > 255 || (digits > 1 && s.charAt(start) == '0')) {
        return false;
      }
      parts++;
      if (i == n) {
        break;
      }
      if (s.charAt(i) != '.' || parts == 4) {
        return false;
      }
      i++;
      if (i == n) {
        return false;
      }
    }
    return parts == 4;
  }

  /** An IP literal, or null; never a DNS lookup. */
  static InetAddress literal(String s) {
    if (s == null || s.isEmpty() || s.length() > 64) {
      return null;
    }
    boolean v4 = IPV4.matcher(s).matches();
    boolean v6 = !v4 && s.indexOf(':') >= 0 && IPV6.matcher(s).matches();
    if (!v4 && !v6) {
      return null;
    }
    try {
      return InetAddress.getByName(s);   // a literal: parsed, not looked up
    } catch (UnknownHostException | SecurityException e) {
      return null;
    }
  }

  private boolean trusted(InetAddress a) {
    byte[] addr = a.getAddress();
    for (int i = 0; i < networks.size(); i++) {
      if (matches(addr, networks.get(i), prefixes.get(i))) {
        return true;
      }
    }
    return false;
  }

  private static boolean matches(byte[] addr, byte[] net, int bits) {
    if (addr.length != net.length) {
      return false;
    }
    for (int i = 0; i < bits; i++) {
      int mask = 0x80 >>> (i % 8);
      if ((addr[i / 8] & mask) != (net[i / 8] & mask)) {
        return false;
      }
    }
    return true;
  }

  private String format(InetAddress a) {
    byte[] b = a.getAddress();
    if (b.length == 4) {
      return a.getHostAddress();
    }
    byte[] masked = b.clone();
    for (int i = ipv6PrefixBits; i < 128; i++) {
      masked[i / 8] &= (byte) ~(0x80 >>> (i % 8));
    }
    try {
      String s = InetAddress.getByAddress(masked).getHostAddress();
      return s.toLowerCase(Locale.ROOT) + "/" + ipv6PrefixBits;
    } catch (UnknownHostException e) {
      return a.getHostAddress();
    }
  }
}
