package dev.sluice.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sluice.spi.PermitReply;
import dev.sluice.spi.PermitStore;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The ids a store limiter gives its permits, and finding a permit by its id (issue 44, item 4). */
class SharedPermitIdsTest {
  /** SipHash-2-4's published vector for the 8-byte message 00..07 under the key 00..0f. */
  @Test
  void sipHash_isSipHash24() {
    long k0 = 0x0706050403020100L;
    long k1 = 0x0f0e0d0c0b0a0908L;
    assertThat(StoreConcurrencyLimiter.sipHash(k0, k1, 0x0706050403020100L))
        .isEqualTo(0x93f5f5799a932462L);
  }

  @Test
  void ids_areDistinct_andTheirHashedPartIsNotTheNumber() {
    Map<String, Integer> held = new HashMap<>();
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(1000).store(new MapStore(held))
        .build();
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < 1000; i++) {
      ids.add(l.tryAcquire("k").permit().sharedId());
    }
    assertThat(ids).hasSize(1000).allMatch(id -> id.split("-").length == 3);
    assertThat(ids.stream().map(id -> id.split("-")[0]).distinct()).as("one instance").hasSize(1);
    assertThat(ids.stream().map(id -> id.split("-")[2]).distinct()).hasSize(1000);
    assertThat(held.keySet()).isEqualTo(ids);
  }

  @Test
  void aPermitFoundByItsId_isReleasedOnTheStore_andCountedHere() {
    Map<String, Integer> held = new HashMap<>();
    MapStore store = new MapStore(held);
    ConcurrencyLimiter granting = ConcurrencyLimiter.builder().limit(2).store(store).build();
    ConcurrencyLimiter other = ConcurrencyLimiter.builder().limit(2).store(store).build();
    Permit p = granting.tryAcquire("k", 2).permit();
    assertThat(other.sharedPermit("k", p.sharedId(), 2).renew()).isTrue();
    assertThat(other.sharedPermit("other", p.sharedId(), 2).release(Outcome.SUCCESS))
        .as("another key names no permit").isFalse();
    assertThat(other.sharedPermit("k", p.sharedId() + "x", 2).release(Outcome.SUCCESS))
        .as("another id names no permit").isFalse();
    Permit found = other.sharedPermit("k", p.sharedId(), 2);
    assertThat(found.sharedId()).isEqualTo(p.sharedId());
    assertThat(found.release(Outcome.DROPPED)).isTrue();
    assertThat(held).isEmpty();
    assertThat(other.stats().ended(Outcome.DROPPED)).isEqualTo(1);
    assertThat(other.stats().inFlight()).as("granted elsewhere: not in this one's flight").isZero();
    assertThat(granting.tryAcquire("k", 2).isAcquired()).isTrue();
  }

  @Test
  void badIds_areNamed_andMemoryHasNone() {
    ConcurrencyLimiter l = ConcurrencyLimiter.builder().limit(2).store(new MapStore(new HashMap<>()))
        .build();
    assertThatThrownBy(() -> l.sharedPermit("k", "", 1)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("a shared permit id is 1 to 255 printable ASCII characters but was ''");
    assertThatThrownBy(() -> l.sharedPermit("k", "a b", 1))
        .hasMessageContaining("but was 'a b'");
    assertThatThrownBy(() -> l.sharedPermit("k", "x", 0)).hasMessage("weight must be at least 1 but was 0");
    assertThatThrownBy(() -> l.sharedPermit("", "x", 1)).isInstanceOf(IllegalArgumentException.class);
    ConcurrencyLimiter memory = ConcurrencyLimiter.builder().limit(2).build();
    assertThat(memory.tryAcquire("k").permit().sharedId()).isNull();
    assertThatThrownBy(() -> memory.sharedPermit("k", "x", 1))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("only a limiter on a shared store");
  }

  /** A plain map of permit ids to weights, one key, no leases: enough for ids. */
  private static final class MapStore implements PermitStore {
    private final Map<String, Integer> held;

    MapStore(Map<String, Integer> held) {
      this.held = held;
    }

    private int total() {
      return held.values().stream().mapToInt(Integer::intValue).sum();
    }

    @Override
    public synchronized PermitReply acquire(String key, String id, int weight, int ceiling,
        long lease) {
      if (total() + weight > ceiling) {
        return new PermitReply(false, total(), 0);
      }
      held.put(id, weight);
      return new PermitReply(true, total(), 0);
    }

    @Override
    public synchronized PermitReply renew(String key, String id, int weight, long lease) {
      return new PermitReply(key.equals("k") && held.containsKey(id), total(), 0);
    }

    @Override
    public synchronized PermitReply release(String key, String id, int weight) {
      boolean done = key.equals("k") && held.remove(id) != null;
      return new PermitReply(done, total(), 0);
    }

    @Override
    public synchronized PermitReply cancel(String key, String id, int weight, long lease) {
      return release(key, id, weight);
    }

    @Override
    public synchronized int inFlight(String key) {
      return total();
    }

    @Override
    public synchronized void resetPermits(String key) {
      held.clear();
    }
  }
}
