package dev.sluice;

import dev.sluice.internal.KeyTable;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/*
 * A Group in memory.
 *
 * Two key tables: the keys' cells (assured and ceilings) and the groups' parent cells, each
 * bounded by maximumKeys. A decision locks the key's cell (keys of one group do not wait for one
 * another), reads the parent, decides, and publishes the parent's new state with one CAS; if
 * another key's decision changed the parent first, it decides again on the new state. The CAS is
 * the decision's linearization point; the key's own state is written before the key's monitor is
 * released, and every reader of it holds that monitor, so the pair changes atomically.
 *
 * The parent of a bucket of scale 1 is one long (E) changed by CAS; of a larger scale, an
 * immutable [E, R] array swapped by CAS. A parent cell is swept when idle like any key; a
 * decision that finds it dead starts over on a fresh one.
 */
final class InMemoryGroupLimiter extends AbstractRateLimiter {
  private final GroupLimits g;
  private final KeyTable keys;
  private final KeyTable parents;

  InMemoryGroupLimiter(Group group, Clock clock, Scheduler scheduler, long maximumKeys) {
    super(group.limits(), clock, scheduler);
    this.g = new GroupLimits(group, InMemoryRateLimiter.TICKS_PER_SECOND);
    this.keys = new KeyTable(this.clock, maximumKeys);
    this.parents = new KeyTable(this.clock, maximumKeys);
  }

  @Override
  public Decision tryAcquire(String key, double cost) {
    return decide(key, Engine.TRY_ACQUIRE, cost);
  }

  @Override
  public Decision check(String key, double cost) {
    return decide(key, Engine.CHECK, cost);
  }

  @Override
  public Decision fillUp(String key, double cost) {
    throw new UnsupportedOperationException(GroupLimits.unsupported(Engine.FILL_UP));
  }

  @Override
  public Decision reserve(String key, double cost) {
    throw new UnsupportedOperationException(GroupLimits.unsupported(Engine.RESERVE));
  }

  /** Forgets the key (its assured and ceiling buckets); its group's parent keeps what it holds. */
  @Override
  public void reset(String key) {
    keys.forget(Checks.key(key));
  }

  @Override
  public LimiterStats stats() {
    return new LimiterStats(0, 0, false, keys.evictedIdle() + parents.evictedIdle(),
        keys.evictedBusy() + parents.evictedBusy(), 0, keys.size() + parents.size());
  }

  /** Keys and groups held (for tests). */
  long keysHeld() {
    return keys.size();
  }

  long groupsHeld() {
    return parents.size();
  }

  private Decision decide(String key, int op, double cost) {
    Checks.key(key);
    if (cost != 1) {
      Checks.cost(cost);
    }
    String group = g.group.groupOf(key);
    long[] quanta = g.quanta(cost);
    if (op == Engine.CHECK) {
      return check(key, group, quanta);
    }
    for (;;) {
      Parent parent = (Parent) parents.get(group);
      if (parent == null) {
        Parent born = new Parent(g.parent());
        if (!parents.insert(group, born)) {
          continue;
        }
        parents.inserted();
        parent = born;
      }
      Member cell = (Member) keys.get(key);
      if (cell == null) {
        Member born = new Member(g);
        synchronized (born) {
          if (!keys.insert(key, born)) {
            continue;
          }
          Decision d = born.decide(g, parent, clock, op, quanta);
          keys.inserted();
          if (d != null) {
            return d;
          }
        }
        parents.remove(group, parent);   // the parent died under us: start over
        continue;
      }
      Decision d = cell.decideIfAlive(g, parent, clock, op, quanta);
      if (d != null) {
        return d;
      }
      if (cell.isDead()) {
        keys.remove(key, cell);
      } else {
        parents.remove(group, parent);
      }
    }
  }

  /**
   * A check changes nothing, so it answers an unknown key or group from fresh cells that it does
   * not publish: checks never fill the tables. A fresh cell stands for an absent one only if it
   * is still absent after the other was read (a decision publishes the parent, then the key,
   * then changes the parent), so the answer is that of one instant.
   */
  private Decision check(String key, String group, long[] quanta) {
    for (;;) {
      Parent parent = (Parent) parents.get(group);
      boolean freshParent = parent == null;
      if (freshParent) {
        parent = new Parent(g.parent());
      }
      Member cell = (Member) keys.get(key);
      boolean freshKey = cell == null;
      if (freshKey) {
        cell = new Member(g);
      }
      Decision d = cell.decideIfAlive(g, parent, clock, Engine.CHECK, quanta);
      if (d != null && (!freshKey || !keys.containsKey(key))
          && (!freshParent || !parents.containsKey(group))) {
        return d;
      }
      if (!freshKey && cell.isDead()) {
        keys.remove(key, cell);
      } else if (!freshParent && d == null) {
        parents.remove(group, parent);
      }
    }
  }

  /** A key's assured and ceiling buckets, decided under the cell's monitor. */
  static final class Member extends KeyTable.Cell {
    private final GroupLimits g;
    /** The key's slots, then room for the parent's as read at each decision. */
    private final long[] state;
    private final long[] next;
    private boolean dead;

    Member(GroupLimits g) {
      this.g = g;
      this.state = g.initialState();
      this.next = new long[state.length];
    }

    synchronized boolean isDead() {
      return dead;
    }

    synchronized Decision decideIfAlive(GroupLimits g, Parent parent, Clock clock, int op,
        long[] quanta) {
      return dead ? null : decide(g, parent, clock, op, quanta);
    }

    /**
     * Under the monitor: the decision, or null if the parent is dead. The key's own limits are
     * read once (nothing else changes them); each attempt reads the parent, finds the path and
     * CASes the parent's new state, allocating nothing; once the CAS succeeds, the key is
     * charged and the figures are built. The clock is read once: a decision that commits after
     * another key's newer one counts its charge from its own, older reading, which holds the
     * parent as full or fuller than a newer reading would (never admits more).
     */
    Decision decide(GroupLimits g, Parent parent, Clock clock, int op, long[] quanta) {
      int k = g.keySlots;
      long now = clock.nanoTime();
      int keyFits = g.keyFits(state, now, quanta);
      for (;;) {
        long e = 0;
        long[] pair = null;
        if (parent.single) {
          e = parent.readE();
          if (e == Parent.DEAD) {
            return null;
          }
          state[k] = e;
        } else {
          pair = parent.readPair();
          if (pair == Parent.DEAD_PAIR) {
            return null;
          }
          state[k] = pair[0];
          state[k + 1] = pair[1];
        }
        int path = g.path(keyFits, state, now, quanta);
        if (op == Engine.CHECK || path == GroupLimits.REJECTED) {
          return g.figures(state, state, now, quanta, path);
        }
        g.chargeParent(state, now, quanta, next);
        if (!(parent.single ? parent.casE(e, next[k])
            : parent.casPair(pair, new long[] {next[k], next[k + 1]}))) {
          continue;   // another key's decision changed the parent first: decide again
        }
        System.arraycopy(state, 0, next, 0, k);
        g.chargeKey(state, now, quanta, path, next);
        Decision d = g.figures(state, next, now, quanta, path);
        System.arraycopy(next, 0, state, 0, k);
        return d;
      }
    }

    @Override
    protected synchronized boolean killIfIdle(long now) {
      if (!dead && g.keyIdleAfter(state, now) == 0) {
        dead = true;
      }
      return dead;
    }

    @Override
    protected synchronized boolean kill() {
      dead = true;
      return true;
    }

    @Override
    protected synchronized long pressure(long now) {
      return dead ? 0 : g.keyIdleAfter(state, now);
    }
  }

  /**
   * A group's parent bucket: [E] as one long, or [E, R] as an immutable array, changed by CAS.
   */
  static final class Parent extends KeyTable.Cell {
    static final long DEAD = LockFreeBucket.DEAD;
    static final long[] DEAD_PAIR = new long[0];
    private static final VarHandle E;
    private static final VarHandle PAIR;

    static {
      try {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        E = lookup.findVarHandle(Parent.class, "e", long.class);
        PAIR = lookup.findVarHandle(Parent.class, "pair", long[].class);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }

    private final CompiledLimit limit;
    /** Whether the state is one long (scale 1). */
    final boolean single;
    @SuppressWarnings("unused") // through E
    private volatile long e = Ticks.NONE;
    @SuppressWarnings("unused") // through PAIR
    private volatile long[] pair;

    Parent(CompiledLimit limit) {
      this.limit = limit;
      this.single = limit.slots == 1;
      if (!single) {
        pair = new long[] {Ticks.NONE, 0};
      }
    }

    /** E, or DEAD. */
    long readE() {
      return (long) E.getVolatile(this);
    }

    /** [E, R], never changed in place, or DEAD_PAIR. */
    long[] readPair() {
      return (long[]) PAIR.getVolatile(this);
    }

    boolean casE(long seen, long next) {
      return E.compareAndSet(this, seen, next);
    }

    boolean casPair(long[] seen, long[] next) {
      return PAIR.compareAndSet(this, seen, next);
    }

    /** The backlog in steps, or -1 if dead. */
    private long backlog(long now) {
      if (single) {
        long v = readE();
        return v == DEAD ? -1 : BucketRules.backlog(limit, new long[] {v}, 0, now);
      }
      long[] p = readPair();
      return p == DEAD_PAIR ? -1 : BucketRules.backlog(limit, p, 0, now);
    }

    @Override
    protected boolean killIfIdle(long now) {
      for (;;) {
        if (single) {
          long v = readE();
          if (v == DEAD || (BucketRules.backlog(v, now) == 0 && casE(v, DEAD))) {
            return true;
          }
          if (BucketRules.backlog(v, now) > 0) {
            return false;
          }
        } else {
          long[] p = readPair();
          if (p == DEAD_PAIR || (BucketRules.backlog(limit, p, 0, now) == 0 && casPair(p, DEAD_PAIR))) {
            return true;
          }
          if (BucketRules.backlog(limit, p, 0, now) > 0) {
            return false;
          }
        }
      }
    }

    @Override
    protected boolean kill() {
      if (limit.slots == 1) {
        E.setVolatile(this, DEAD);
      } else {
        PAIR.setVolatile(this, DEAD_PAIR);
      }
      return true;
    }

    @Override
    protected long pressure(long now) {
      return Math.max(0, backlog(now));
    }
  }
}
