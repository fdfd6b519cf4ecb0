package dev.sluice.testkit;

import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.spi.StoreReference;
import dev.sluice.spi.StoreProtocol;
import dev.sluice.spi.StoreProtocol.Operation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Golden state vectors, generated from core's engine (through {@link StoreReference}) each time
 * the tests run, never edited by hand: {@code (limits, state, now, operation, cost) -> state to
 * keep}. They cover every limit kind and operation (leases and releases on buckets), several
 * limits per key, scales above 1, penalties, costs
 * from 10^-7 to 10^12, states far from empty, and clocks that jump ahead, stand still and go
 * back. A store replays each straight into its script or function and must write the same state
 * bit for bit ({@link GoldenVectorSuite}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class GoldenVectors {
  private GoldenVectors() {}

  /**
   * One case. {@code state} and {@code expected} are null when the key is (to be) absent;
   * {@code expected} is what the store must hold after applying the operation.
   */
  public record Vector(int index, List<Limit> limits, StoreReference reference, long[] state,
      long now, Operation operation, double cost, long count, long[] expected) {
    @Override
    public String toString() {
      return "vector " + index + ": " + limits + " state " + Arrays.toString(state) + " now "
          + now + " " + operation + "(" + cost + (count != 1 ? " x " + count : "") + ") -> "
          + Arrays.toString(expected);
    }
  }

  /** Limit sets: every kind, scales 1, 3, 7 and millions, penalties, and combinations. */
  static List<List<Limit>> limitSets() {
    Limit seed000 = Limit.leakyBucket(3, Rate.perSecond(1.5));
    Limit fraction = Limit.leakyBucket(10, Rate.perSecond(300_000));
    Limit token = Limit.tokenBucket(5, Rate.perMinute(7));
    Limit gcra = Limit.gcra(Rate.perSecond(1000), 5);
    // scale 1, whole costs: exact ties at capacity (cost 3 on empty, three costs of 1 at once)
    Limit ties = Limit.leakyBucket(3, Rate.perSecond(1000));
    Limit penalized = Limit.leakyBucket(2, Rate.perSecond(1)).withPenalty(Duration.ofSeconds(3));
    Limit penalizedScaled =
        Limit.leakyBucket(4, Rate.perSecond(1.5)).withPenalty(Duration.ofMillis(1500));
    Limit fine = Limit.leakyBucket(1000, Rate.perSecond(1234.5678));
    Limit rounded = Limit.leakyBucket(2.7e11, Rate.perSecond(1_234_567.1));
    Limit fixed = Limit.fixedWindow(5, Duration.ofSeconds(1));
    Limit fixedPenalty = Limit.fixedWindow(3.5, Duration.ofMillis(700)).withPenalty(Duration.ofSeconds(2));
    Limit sliding = Limit.slidingWindow(10, Duration.ofSeconds(2));
    Limit slidingPenalty =
        Limit.slidingWindow(2.25, Duration.ofMillis(300)).withPenalty(Duration.ofMillis(900));
    List<List<Limit>> sets = new ArrayList<>();
    for (Limit l : List.of(seed000, fraction, token, gcra, ties, ties, penalized, penalizedScaled, fine,
        rounded, fixed, fixedPenalty, sliding, slidingPenalty)) {
      sets.add(List.of(l));
    }
    sets.add(List.of(seed000, gcra));
    sets.add(List.of(penalizedScaled, token, fraction));
    sets.add(List.of(fine, penalized));
    sets.add(List.of(seed000, fixedPenalty));
    sets.add(List.of(slidingPenalty, penalized, fixed));
    sets.add(List.of(sliding, fraction));
    return sets;
  }

  private static final double[] COSTS = {1, 1, 1, 0.5, 0.1, 2.75, 1e-7, 3, 1000, 1e12, 0.333333};
  /** Grains a lease asks for or a release gives back. */
  private static final long[] COUNTS = {0, 1, 2, 3, 7, 100, 1_000_000, 1L << 40};

  /**
   * {@code count} vectors for a store of {@code ticksPerSecond}, from {@code seed}: random walks
   * of 40 operations per limit set, with now near today's microseconds since the epoch.
   */
  public static List<Vector> generate(long ticksPerSecond, int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<List<Limit>> sets = limitSets();
    List<Vector> out = new ArrayList<>(count);
    long second = ticksPerSecond;
    while (out.size() < count) {
      List<Limit> limits = sets.get(random.nextInt(sets.size()));
      StoreReference ref = StoreReference.of(limits, ticksPerSecond);
      boolean buckets = limits.stream().allMatch(l -> l.rate() != null);
      long now = 1_763_900_000L * second + random.nextLong(second);
      long[] state = null;
      for (int step = 0; step < 40 && out.size() < count; step++) {
        switch (random.nextInt(8)) {
          case 0:
            break;                                              // same instant
          case 1:
            now -= random.nextLong(second);                     // back
            break;
          case 2:
            now += random.nextLong(100 * second);               // far ahead
            break;
          default:
            now += random.nextLong(second / 2);
        }
        if (random.nextInt(25) == 0) {
          state = extreme(ref, limits, now, random);
        }
        Operation op = Operation.values()[random.nextInt(buckets ? 6 : 3)];
        double cost = COSTS[random.nextInt(COSTS.length)];
        long grains = op == Operation.LEASE || op == Operation.RELEASE
            ? COUNTS[random.nextInt(COUNTS.length)] : 1;
        long[] before = state == null ? ref.initialState() : state;
        long[] next = ref.next(before, now, op, cost, grains);
        long[] kept;
        if (Arrays.equals(next, before)) {
          kept = state;
        } else {
          kept = ref.idleAfter(next, now) == 0 ? null : next;
        }
        out.add(new Vector(out.size(), limits, ref, state, now, op, cost, grains, kept));
        state = kept;
      }
    }
    return out;
  }

  /** A state far from empty: buckets full for years, windows with large counts and blocks. */
  private static long[] extreme(StoreReference ref, List<Limit> limits, long now,
      SplittableRandom random) {
    long[] s = ref.initialState();
    long far = 1L << 40;
    int o = 0;
    String layout = ref.layout();
    for (int i = 0; i < limits.size(); i++) {
      char letter = layout.charAt(i);
      switch (letter) {
        case 'b':
          s[o] = now + random.nextLong(far);
          o += 1;
          break;
        case 'r':
          s[o] = now + random.nextLong(far);
          s[o + 1] = random.nextLong(1_000_000);
          o += 2;
          break;
        case 'f':
          s[o] = now - random.nextLong(2_000_000);
          s[o + 1] = random.nextLong(10_000_000);
          s[o + 2] = random.nextBoolean() ? StoreProtocol.NONE : now + random.nextLong(far);
          o += 3;
          break;
        default:
          s[o] = now - random.nextLong(1_000_000);
          s[o + 1] = random.nextLong(20_000_000);
          s[o + 2] = random.nextLong(20_000_000);
          s[o + 3] = random.nextBoolean() ? StoreProtocol.NONE : now + random.nextLong(far);
          o += 4;
      }
    }
    return s;
  }

  /**
   * One group case: the states of a key of the group and of the group's parent (null when absent)
   * and what the store must hold after the operation.
   */
  public record GroupVector(int index, Group group, StoreReference reference, long[] keyState,
      long[] parentState, long now, Operation operation, double cost, long[] expectedKey,
      long[] expectedParent) {
    @Override
    public String toString() {
      return "group vector " + index + ": " + group + " key " + Arrays.toString(keyState)
          + " parent " + Arrays.toString(parentState) + " now " + now + " " + operation + "("
          + cost + ") -> key " + Arrays.toString(expectedKey) + " parent "
          + Arrays.toString(expectedParent);
    }

    /** The state the store reads: the key's slots, then the parent's. */
    public long[] stateBefore() {
      long[] s = reference.initialState();
      int k = keySlots();
      if (keyState != null) {
        System.arraycopy(keyState, 0, s, 0, keyState.length);
      }
      if (parentState != null) {
        System.arraycopy(parentState, 0, s, k, parentState.length);
      }
      return s;
    }

    /** Slots of the key's part of the state. */
    public int keySlots() {
      return reference.request(Operation.CHECK, 1).keySlots();
    }
  }

  /** Groups: scales 1, 3 and millions, no ceiling, one, two, reserves from 0 to most. */
  static List<Group> groups() {
    return List.of(
        Group.sharing(Limit.leakyBucket(10, Rate.perSecond(10)))
            .assured(Limit.leakyBucket(2, Rate.perSecond(1)))
            .ceiling(Limit.leakyBucket(10, Rate.perSecond(10))).reserve(4),
        Group.sharing(Limit.leakyBucket(3, Rate.perSecond(1.5)))
            .assured(Limit.leakyBucket(1, Rate.perSecond(0.5))).reserve(1),
        Group.sharing(Limit.gcra(Rate.perSecond(1000), 50))
            .assured(Limit.tokenBucket(5, Rate.perMinute(7)))
            .ceiling(Limit.leakyBucket(20, Rate.perSecond(300)),
                Limit.leakyBucket(10, Rate.perSecond(1234.5678))).reserve(0),
        Group.sharing(Limit.leakyBucket(2.7e11, Rate.perSecond(1_234_567.1)))
            .assured(Limit.leakyBucket(1e9, Rate.perSecond(1000))).reserve(1e11),
        Group.sharing(Limit.leakyBucket(100, Rate.perSecond(1000)))
            .assured(Limit.leakyBucket(10, Rate.perSecond(100)))
            .ceiling(Limit.leakyBucket(100, Rate.perSecond(1000))).reserve(99.5));
  }

  /**
   * {@code count} group vectors for a store of {@code ticksPerSecond}, from {@code seed}: random
   * walks of 60 decisions by three keys of one group, now near today's microseconds.
   */
  public static List<GroupVector> groups(long ticksPerSecond, int count, long seed) {
    SplittableRandom random = new SplittableRandom(seed);
    List<Group> groups = groups();
    List<GroupVector> out = new ArrayList<>(count);
    long second = ticksPerSecond;
    while (out.size() < count) {
      Group group = groups.get(random.nextInt(groups.size()));
      StoreReference ref = StoreReference.ofGroup(group, ticksPerSecond);
      int k = ref.request(Operation.CHECK, 1).keySlots();
      long now = 1_763_900_000L * second + random.nextLong(second);
      long[][] keys = new long[3][];
      long[] parent = null;
      for (int step = 0; step < 60 && out.size() < count; step++) {
        switch (random.nextInt(8)) {
          case 0:
            break;
          case 1:
            now -= random.nextLong(second);
            break;
          case 2:
            now += random.nextLong(10 * second);
            break;
          default:
            now += random.nextLong(second / 20);
        }
        int who = random.nextInt(3);
        Operation op = random.nextInt(4) == 0 ? Operation.CHECK : Operation.TRY_ACQUIRE;
        double cost = COSTS[random.nextInt(COSTS.length)];
        long[] before = ref.initialState();
        if (keys[who] != null) {
          System.arraycopy(keys[who], 0, before, 0, k);
        }
        if (parent != null) {
          System.arraycopy(parent, 0, before, k, parent.length);
        }
        long[] next = ref.next(before, now, op, cost);
        long[] keyNext = Arrays.copyOfRange(next, 0, k);
        long[] parentNext = Arrays.copyOfRange(next, k, next.length);
        long[] keyKept = Arrays.equals(keyNext, Arrays.copyOfRange(before, 0, k)) ? keys[who]
            : ref.keyIdleAfter(next, now) == 0 ? null : keyNext;
        long[] parentKept = Arrays.equals(parentNext, Arrays.copyOfRange(before, k, before.length))
            ? parent : ref.groupIdleAfter(next, now) == 0 ? null : parentNext;
        out.add(new GroupVector(out.size(), group, ref, keys[who], parent, now, op, cost, keyKept,
            parentKept));
        keys[who] = keyKept;
        parent = parentKept;
      }
    }
    return out;
  }
}
