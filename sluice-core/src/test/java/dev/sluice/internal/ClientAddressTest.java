package dev.sluice.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ClientAddressTest {
  private static final Map<String, List<String>> NO_HEADERS = Map.of();

  @Test
  void theIpv4FastPath_acceptsExactlyWhatTheJdkWritesForAnIpv4Address() throws Exception {
    Random r = new Random(42);
    for (int i = 0; i < 20_000; i++) {
      byte[] b = new byte[4];
      r.nextBytes(b);
      String canonical = InetAddress.getByAddress(b).getHostAddress();
      assertThat(ClientAddress.canonicalIpv4(canonical)).as(canonical).isTrue();
    }
    for (String s : List.of("0.0.0.0", "255.255.255.255", "10.0.0.1", "192.0.2.200")) {
      assertThat(ClientAddress.canonicalIpv4(s)).as(s).isTrue();
    }
    for (String s : List.of("", "1", "1.2.3", "1.2.3.4.5", "1..2.3", "1.2.3.", ".1.2.3", "01.2.3.4",
        "256.1.1.1", "1.2.3.1000", "1.2.3.-1", "a.b.c.d", "1.2.3.4 ", "::1", "1.2.3.4:80")) {
      assertThat(ClientAddress.canonicalIpv4(s)).as(s).isFalse();
    }
    assertThat(ClientAddress.canonicalIpv4(null)).isFalse();
  }

  @Test
  void keysAreTheSame_withAndWithoutTheFastPath() {
    ClientAddress plain = ClientAddress.trusting(List.of(), 64);
    // a trusted block that no test address is in: the slow path, same answers
    ClientAddress slow = ClientAddress.trusting(List.of("203.0.113.0/24"), 64);
    for (String s : List.of("192.0.2.1", "10.0.0.1", "0.0.0.0", "255.255.255.255")) {
      assertThat(plain.clientKey(s, NO_HEADERS::get)).isEqualTo(slow.clientKey(s, NO_HEADERS::get))
          .isEqualTo(s);
    }
    assertThat(plain.clientKey("2001:db8::1", NO_HEADERS::get)).isEqualTo("2001:db8:0:0:0:0:0:0/64");
    assertThat(plain.clientKey("unknown", NO_HEADERS::get)).isEqualTo("unknown");
  }

  @Test
  void forwardedHops_countOnlyFromTrustedProxies() {
    ClientAddress a = ClientAddress.trusting(List.of("10.0.0.0/8"), 64);
    Map<String, List<String>> xff = Map.of("X-Forwarded-For", List.of("198.51.100.7, 10.1.1.1"));
    assertThat(a.clientKey("10.2.2.2", xff::get)).isEqualTo("198.51.100.7");
    assertThat(a.clientKey("192.0.2.9", xff::get)).isEqualTo("192.0.2.9");
    Map<String, List<String>> fwd = Map.of("Forwarded", List.of("for=\"[2001:db8::7]:4711\""));
    assertThat(a.clientKey("10.2.2.2", fwd::get)).isEqualTo("2001:db8:0:0:0:0:0:0/64");
    assertThatThrownBy(() -> ClientAddress.trusting(List.of("10.0.0.0/33"), 64))
        .hasMessageContaining("'10.0.0.0/33'");
    assertThatThrownBy(() -> ClientAddress.trusting(List.of(), 0)).hasMessageContaining("0");
  }
}
