package dev.sluice;

import static dev.sluice.spi.StoreProtocol.FIXED_BLOCKED_UNTIL;
import static dev.sluice.spi.StoreProtocol.FIXED_COUNT;
import static dev.sluice.spi.StoreProtocol.FIXED_START;

/*
 * Fixed window: state [start, count, blockedUntil]. A window starts with the first charge after
 * the last one ended and lasts l.window ticks; count is in micro-units of cost.
 */
final class FixedWindowRules extends Rules {
  static final FixedWindowRules INSTANCE = new FixedWindowRules();

  private FixedWindowRules() {}

  /** A window that never started, has ended, or starts after now (time went back) is expired. */
  private static boolean expired(CompiledLimit l, long start, long now) {
    return start == Ticks.NONE || now >= Ticks.add(start, l.window);
  }

  private static long count(CompiledLimit l, long[] s, int o, long now) {
    return expired(l, s[o + FIXED_START], now) ? 0 : s[o + FIXED_COUNT];
  }

  @Override
  void initialize(CompiledLimit l, long[] s, int o) {
    s[o + FIXED_START] = Ticks.NONE;
    s[o + FIXED_COUNT] = 0;
    s[o + FIXED_BLOCKED_UNTIL] = Ticks.NONE;
  }

  @Override
  boolean fits(CompiledLimit l, long[] s, int o, long now, long q) {
    return blockedFor(s[o + FIXED_BLOCKED_UNTIL], now) == 0 && count(l, s, o, now) + q <= l.capacity;
  }

  @Override
  void charge(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    if (expired(l, s[o + FIXED_START], now)) {
      next[o + FIXED_START] = now;
      next[o + FIXED_COUNT] = q;
    } else {
      next[o + FIXED_COUNT] = s[o + FIXED_COUNT] + q;
    }
  }

  @Override
  boolean fill(CompiledLimit l, long[] s, int o, long now, long q, long[] next) {
    long count = count(l, s, o, now);
    if (expired(l, s[o + FIXED_START], now)) {
      next[o + FIXED_START] = now;
    }
    next[o + FIXED_COUNT] = Math.max(count, Math.min(l.capacity, count + q));
    return count + q >= l.capacity;
  }

  /** Records the end of the block. */
  @Override
  void penalize(CompiledLimit l, long[] s, int o, long now, long[] next) {
    block(l, s, o, FIXED_BLOCKED_UNTIL, now, next);
  }

  @Override
  long retryAfter(CompiledLimit l, long[] s, int o, long now, long q) {
    long wait = blockedFor(s[o + FIXED_BLOCKED_UNTIL], now);
    if (count(l, s, o, now) + q > l.capacity) {
      wait = Math.max(wait,
          Ticks.positiveDifference(Ticks.add(s[o + FIXED_START], l.window), now));
    }
    return wait;
  }

  @Override
  long resetAfter(CompiledLimit l, long[] s, int o, long now) {
    long blocked = blockedFor(s[o + FIXED_BLOCKED_UNTIL], now);
    long end = count(l, s, o, now) > 0
        ? Ticks.positiveDifference(Ticks.add(s[o + FIXED_START], l.window), now) : 0;
    return Math.max(blocked, end);
  }

  @Override
  double remaining(CompiledLimit l, long[] s, int o, long now) {
    return blockedFor(s[o + FIXED_BLOCKED_UNTIL], now) > 0 ? 0
        : Math.max(0, l.capacity - count(l, s, o, now));
  }
}
