package dev.sluice.quota;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * Quotas in this JVM's memory: for one instance, and for tests. At most {@code maxQuotas}
 * quotas, and the newest {@code auditLength} changes in the audit trail. Thread-safe.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/quotas.md">docs/quotas.md</a>.
 */
public final class InMemoryQuotaStore implements QuotaStore {
  /** Quotas held at most by default. */
  public static final int DEFAULT_MAX_QUOTAS = 100_000;
  /** Changes the audit trail keeps by default. */
  public static final int DEFAULT_AUDIT_LENGTH = 10_000;

  private final int maxQuotas;
  private final int auditLength;
  private final Supplier<Instant> clock;
  private final Map<String, Quota> quotas = new LinkedHashMap<>();
  private final ArrayDeque<QuotaChange> audit = new ArrayDeque<>();
  private long version;

  private InMemoryQuotaStore(int maxQuotas, int auditLength, Supplier<Instant> clock) {
    this.maxQuotas = maxQuotas;
    this.auditLength = auditLength;
    this.clock = clock;
  }

  /** A store of the default bounds, on the system's clock. */
  public static InMemoryQuotaStore create() {
    return create(DEFAULT_MAX_QUOTAS, DEFAULT_AUDIT_LENGTH, Instant::now);
  }

  /**
   * A store of at most {@code maxQuotas} quotas keeping the newest {@code auditLength} changes,
   * its changes dated by {@code clock}.
   *
   * @throws IllegalArgumentException naming the value unless both are at least 1
   */
  public static InMemoryQuotaStore create(int maxQuotas, int auditLength,
      Supplier<Instant> clock) {
    if (maxQuotas < 1) {
      throw new IllegalArgumentException("maxQuotas must be at least 1 but was " + maxQuotas);
    }
    if (auditLength < 1) {
      throw new IllegalArgumentException("auditLength must be at least 1 but was "
          + auditLength);
    }
    return new InMemoryQuotaStore(maxQuotas, auditLength, Objects.requireNonNull(clock, "clock"));
  }

  @Override
  public synchronized long version() {
    return version;
  }

  @Override
  public synchronized Snapshot read() {
    return new Snapshot(version, new ArrayList<>(quotas.values()));
  }

  @Override
  public synchronized long put(Quota quota, String who) {
    Objects.requireNonNull(quota, "quota");
    Objects.requireNonNull(who, "who");
    String t = QuotaCodec.target(quota.policy(), quota.key(), quota.prefix());
    Quota before = quotas.get(t);
    if (before == null && quotas.size() >= maxQuotas) {
      throw new IllegalStateException("the store holds its most quotas (" + maxQuotas
          + "): remove one first");
    }
    quotas.put(t, quota);
    record(before, quota, who, quota.reason());
    return version;
  }

  @Override
  public synchronized long remove(String policy, String key, boolean prefix, String who,
      String reason) {
    Objects.requireNonNull(who, "who");
    Objects.requireNonNull(reason, "reason");
    Quota before = quotas.remove(QuotaCodec.target(policy, key, prefix));
    if (before != null) {
      record(before, null, who, reason);
    }
    return version;
  }

  private void record(Quota before, Quota after, String who, String reason) {
    version++;
    audit.addFirst(new QuotaChange(version, clock.get(), who, before, after, reason));
    while (audit.size() > auditLength) {
      audit.removeLast();
    }
  }

  @Override
  public synchronized List<QuotaChange> audit(int n) {
    if (n < 0) {
      throw new IllegalArgumentException("n must be zero or more but was " + n);
    }
    List<QuotaChange> out = new ArrayList<>(Math.min(n, audit.size()));
    for (Iterator<QuotaChange> it = audit.iterator(); it.hasNext() && out.size() < n; ) {
      out.add(it.next());
    }
    return out;
  }
}
