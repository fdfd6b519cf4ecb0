package dev.sluice;

/**
 * What a limiter in fleet mode ({@link Sluice.Builder#leases}) did with leases since it was
 * built. Units are units of cost; a lease is taken in whole units.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/fleet.md#settings">docs/fleet.md, "Settings"</a>.
 *
 * @param leaseCalls lease and release calls sent to the store (refills, returns), failed ones too
 * @param leaseCallNanos the time those calls took together, from sending to the answer (or the
 *     failure) on this instance's clock: {@link #meanLeaseCallNanos()} is the round trip that
 *     bounds what the fleet admits while leases run dry (docs/fleet.md)
 * @param unitsGranted units the store granted, each charged to the shared bucket when granted
 * @param unitsReturned units given back to the shared bucket unspent (on expiry, on close)
 * @param unitsStranded units charged to the shared bucket, never spent and not given back (the
 *     store could not be reached to return them, or a fraction of a unit was left); they only make
 *     the fleet admit less, never more
 * @param unitsHeld units this instance holds now, unspent
 * @param unitsSpent units admitted from leases, without a store call (exact when no call is under
 *     way: {@code unitsGranted = unitsSpent + unitsReturned + unitsStranded + unitsHeld})
 * @param localRejections rejections of a hot key whose lease was empty while the shared bucket
 *     had none to spare, answered without a store call
 * @param unitsReconciled units the failure policy admitted while the store was down, charged to
 *     the shared bucket once it was back (as far as it had room)
 * @param keysLeased keys with a lease record now, at most the settings' maximumKeys
 * @param instances the number of instances the lease caps assume now
 */
public record LeaseStats(long leaseCalls, long leaseCallNanos, long unitsGranted, long unitsReturned,
    long unitsStranded, long unitsHeld, double unitsSpent, long localRejections,
    long unitsReconciled, long keysLeased, int instances) {
  /** The counters of a limiter that is not in fleet mode. */
  public static final LeaseStats NONE = new LeaseStats(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);

  /**
   * The mean time a lease or release call took, in nanoseconds, or 0 before the first call
   * answered.
   *
   * @return {@code leaseCallNanos / leaseCalls}, or 0 without calls
   */
  public double meanLeaseCallNanos() {
    return leaseCalls == 0 ? 0 : (double) leaseCallNanos / leaseCalls;
  }
}
