package dev.sluice;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * One key's lease record in fleet mode ({@link FleetRateLimiter}): the micro-units this instance
 * holds of the shared bucket, what went in and out, the key's demand, and the state of its lease
 * calls. Read and written by request threads and the store's callbacks at once: every field is
 * atomic or volatile.
 */
final class LeaseRecord {
  final String key;
  /** Micro-units held, unspent. */
  final AtomicLong held = new AtomicLong();
  /** When what is held is given back (nanos); meaningful while something is held. */
  volatile long deadline;
  /** Micro-units granted into this record, and taken out of it (given back or dropped). */
  final AtomicLong in = new AtomicLong();
  final AtomicLong out = new AtomicLong();
  /** Demand not served from the lease (rejected locally, or sent to the store), micro-units. */
  final LongAdder unmet = new LongAdder();
  /** What had been spent at the last demand sample. */
  volatile long spentAtSample;
  final AtomicLong sampleStart;
  /** Demand, units per second (an average over the last samples). */
  volatile double rate;
  /** A lease or release call of this key is in flight. */
  final AtomicBoolean busy = new AtomicBoolean();
  /** No lease call before this instant (nanos): pacing after a short grant. */
  volatile long nextCall;
  /** The last grant was less than asked: the shared bucket had no more room. */
  volatile boolean short_;
  /** A store decision of this key is in flight while its lease is empty (one at a time). */
  final AtomicBoolean probing = new AtomicBoolean();
  /** The last lease call failed: decisions go through the store's failure handling. */
  volatile boolean failing;
  /**
   * Micro-units the failure policy admitted while the store could not be reached, not charged
   * to the shared bucket: charged (as far as it has room) once the store is back.
   */
  final AtomicLong owed = new AtomicLong();
  volatile long resetAfterNanos;
  /** Below this many micro-units held, a request asks for a refill (half the target). */
  volatile long lowWater;

  LeaseRecord(String key, long now) {
    this.key = key;
    this.sampleStart = new AtomicLong(now);
  }

  /** Micro-units spent from this record's leases (exact when no call is under way). */
  long spent() {
    return in.get() - out.get() - held.get();
  }
}
