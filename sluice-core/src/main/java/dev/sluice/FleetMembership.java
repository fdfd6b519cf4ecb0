package dev.sluice;

import dev.sluice.spi.DecisionStore;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * This instance's place in its fleet: it tells the store it is alive and reads how many
 * instances are ({@link DecisionStore#liveInstances}), so that the caps divide the fleet's bound
 * among as many instances as there really are, never fewer than the settings say.
 */
final class FleetMembership {
  private final DecisionStore store;
  private final String fleet;
  private final int configured;
  private final long ttlMillis;
  /** This instance, to the store's count of the fleet's live instances. */
  private final String instanceId = UUID.randomUUID().toString();
  private final AtomicBoolean busy = new AtomicBoolean();
  /** How many instances the store last counted (0 before it answered, or if it cannot). */
  private volatile int seen;

  FleetMembership(DecisionStore store, String fleet, int configured, long ttlMillis) {
    this.store = store;
    this.fleet = fleet;
    this.configured = configured;
    this.ttlMillis = ttlMillis;
  }

  /** The instances the caps assume: as configured, or as many as the store last counted if more. */
  int instances() {
    return Math.max(configured, seen);
  }

  /**
   * Tells the store this instance is alive and reads how many are (one call at a time). A store
   * that cannot count answers -1 and changes nothing.
   */
  // FutureReturnValueIgnored: the callback consumes the answer and its failure; the stage it returns has no reader
  @SuppressWarnings("FutureReturnValueIgnored")
  void heartbeat() {
    if (!busy.compareAndSet(false, true)) {
      return;
    }
    CompletableFuture<Integer> counted;
    try {
      counted = store.liveInstances(fleet, instanceId, ttlMillis);
    } catch (RuntimeException e) {
      counted = CompletableFuture.failedFuture(e);
    }
    counted.whenComplete((n, failure) -> {
      if (failure == null && n != null && n > 0) {
        seen = n;
      }
      busy.set(false);
    });
  }

  /** A fleet name from the limits: limiters with the same limits on one store count together. */
  static String fleetOf(List<Limit> limits) {
    try {
      StringBuilder all = new StringBuilder();
      for (Limit l : limits) {   // every figure of the limit, not only its name
        all.append(l.algorithm().id()).append('|').append(l.capacity()).append('|')
            .append(l.rate()).append('|').append(l.window()).append('|').append(l.penalty())
            .append('|').append(l.name()).append(';');
      }
      byte[] digest = MessageDigest.getInstance("SHA-256")
          .digest(all.toString().getBytes(StandardCharsets.UTF_8));
      StringBuilder b = new StringBuilder("limits-");
      for (int i = 0; i < 8; i++) {
        b.append(String.format(Locale.ROOT, "%02x", digest[i]));
      }
      return b.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e);
    }
  }
}
