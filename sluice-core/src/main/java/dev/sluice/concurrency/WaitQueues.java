package dev.sluice.concurrency;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.Arrays;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * One key's waiters, a queue per {@link Priority} (the highest first), served in
 * {@link QueueOrder} within a priority, or with {@link FairQueuing} by fair queuing among flows
 * within a priority; the in-memory and the store limiter share it. Not thread-safe: the key's
 * monitor guards it. Every change is also counted in the limiter's total of waiters
 * ({@link Counters#waiting}).
 *
 * @param <W> the limiter's waiter
 */
final class WaitQueues<W extends WaitQueues.Entry> {
  /** What a waiter is to its queues. */
  static class Entry {
    private static final Priority[] LEVELS = Priority.values();
    /** Its priority's ordinal. */
    final int priority;
    /** The weight it waits for. */
    final int weight;
    /** When it started waiting, on the limiter's clock. */
    final long since;
    /** Completed when it is answered (done: cancelled, timed out or interrupted too). */
    final CompletableFuture<Acquisition> future;
    /** The flow it belongs to under fair queuing (null: the flow of everyone unnamed). */
    final String flow;
    /** Under fair queuing: the queue it is counted in, its tag, its arrival order. */
    int fairQueue = -1;
    double tag;
    long fairSeq;

    Entry(int weight, int priority, long since, CompletableFuture<Acquisition> future) {
      this(weight, priority, since, future, null);
    }

    Entry(int weight, int priority, long since, CompletableFuture<Acquisition> future,
        String flow) {
      this.weight = weight;
      this.priority = priority;
      this.since = since;
      this.future = future;
      this.flow = flow;
    }

    /** Its priority's ordinal. */
    final int priority() {
      return priority;
    }

    /** Its priority. */
    final Priority level() {
      return LEVELS[priority];
    }

    /** The weight it waits for. */
    final int weight() {
      return weight;
    }

    /** When it started waiting, on the limiter's clock. */
    final long since() {
      return since;
    }

    /** Completed when it is answered (done: cancelled, timed out or interrupted too). */
    final CompletableFuture<Acquisition> future() {
      return future;
    }
  }

  private static final int PRIORITIES = Priority.values().length;

  private final ArrayDeque<W>[] queues;
  /** With fair queuing, each priority's queues; null without. */
  private final FairLevel[] fair;
  private final FairQueuing fairQueuing;
  private final QueueOrder order;
  private final AtomicLong total;
  private final Counters counters;
  private int count;
  /** CoDel's target sojourn (ns); 0 when CoDel is off. */
  private final long codelTarget;
  /** CoDel's interval (ns). */
  private final long codelInterval;
  /** When the sojourns, above the target since, will have been so for an interval; or NONE. */
  private long firstAbove = NONE;
  /** CoDel is shedding: until the queue drains or a sojourn is below the target again. */
  private boolean shedding;
  private static final long NONE = Long.MIN_VALUE;

  WaitQueues(QueueOrder order, Counters counters) {
    this(order, counters, 0, 0, null);
  }

  /**
   * Queues with CoDel when {@code codelTarget} is above 0: a queue whose waiters' sojourns, as
   * they are dequeued ({@link #shedOnDequeue}), stay at or above the target for a whole
   * interval sheds until it drains.
   */
  @SuppressWarnings({"unchecked", "rawtypes"})
  WaitQueues(QueueOrder order, Counters counters, long codelTarget, long codelInterval,
      FairQueuing fairQueuing) {
    this.order = order;
    this.counters = counters;
    this.total = counters.waiting;
    this.codelTarget = codelTarget;
    this.codelInterval = codelInterval;
    this.fairQueuing = fairQueuing;
    this.queues = new ArrayDeque[PRIORITIES];
    for (int i = 0; i < PRIORITIES; i++) {
      queues[i] = new ArrayDeque<>();
    }
    if (fairQueuing == null) {
      this.fair = null;
    } else {
      this.fair = new WaitQueues.FairLevel[PRIORITIES];
    }
  }

  /**
   * A priority's waiters under fair queuing. Each flow is dealt a hand of the level's queues
   * ({@link FairQueuing#hand}). The queues count waiters, for admission: a waiter joins the least
   * occupied queue of its hand, and is refused when that one is full. And they keep, as a
   * count-min sketch with conservative update keeps counts, each flow's recent demand: the
   * weight it asked for (granted at once or queued), decaying by e every
   * {@linkplain FairQueuing#memory() memory}. A flow's demand is read as the least among its
   * hand's queues; a request adds its weight to that and raises every queue of the hand that is
   * below the sum to it. The sum is the request's virtual finish, its tag, and the live waiter of
   * the smallest tag is served first (arrival order breaks ties). A flow whose demand is at most
   * {@link #LIGHT} times the demand of the typical request's flow is light: its tag is the
   * level's floor, which only rises, so light flows are served in arrival order, ahead of every
   * heavier flow, and the sketch's noise (a quiet flow reads the flows it shares queues with)
   * does not reorder them. Heavier flows follow by their demand: a flood moves its whole hand
   * ahead together, one stream however many queues it occupies, and a quiet flow is taken for
   * one only when floods hold every queue of its hand ({@link FairQueuing#collisionOdds}) or
   * its queues are shared by too many flows. Tags are kept in units that grow by e every memory
   * (a tag of now and one of a second ago compare as demands of the same moment, a waiter ageing
   * ahead slowly), rebased before they could overflow. Memory: the queues' two numbers and the
   * waiters, whatever the number of flows.
   */
  private final class FairLevel {
    final int[] occupancy;
    /** Each queue's demand, in units that grow by e every memory from {@link #base}. */
    final double[] demand;
    final PriorityQueue<W> byTag = new PriorityQueue<>((a, b) -> a.tag != b.tag
        ? Double.compare(a.tag, b.tag) : Long.compare(a.fairSeq, b.fairSeq));
    final double memoryNanos;
    final int priority;
    /** The requests of the memory, in the current units. */
    double requests;
    /** The requests of the memory each over its flow's demand (about the flows), current units. */
    double perFlow;
    /** The tag of a light flow, in the current units; never decreases. */
    double floor;
    long base;
    long seq;
    int size;

    FairLevel(int n, int priority, long now) {
      this.priority = priority;
      occupancy = new int[n];
      demand = new double[n];
      memoryNanos = fairQueuing.memory().toNanos();
      base = now;
    }

    /** The least occupied queue of the flow's hand; -1 when even that one is full. */
    int choose(String flow) {
      int best = -1;
      for (int q : fairQueuing.hand(flow == null ? "" : flow)) {
        if (best < 0 || occupancy[q] < occupancy[best]) {
          best = q;
        }
      }
      return occupancy[best] >= fairQueuing.queueLength() ? -1 : best;
    }

    /**
     * Counts {@code weight} more of {@code flow}'s demand at {@code now}: the least of its
     * hand's queues plus the weight, written to each queue of the hand below it. Returns that
     * sum, the request's tag.
     */
    double charge(String flow, int weight, long now) {
      double scale = Math.exp((now - base) / memoryNanos);
      if (scale > REBASE) {   // the units grew too far: every number scaled back to now
        for (int i = 0; i < demand.length; i++) {
          demand[i] /= scale;
        }
        for (W w : byTag) {
          w.tag /= scale;   // a uniform scale keeps the heap's order
        }
        floor /= scale;
        requests /= scale;
        perFlow /= scale;
        base = now;
        scale = 1;
      }
      int[] hand = fairQueuing.hand(flow == null ? "" : flow);
      double least = Double.MAX_VALUE;
      for (int i : hand) {
        least = Math.min(least, demand[i]);
      }
      double tag = least + weight * scale;
      for (int i : hand) {
        demand[i] = Math.max(demand[i], tag);
      }
      // the typical flow's demand: the requests of the memory over its flows, each request
      // weighing 1 / its flow's demand (a flow that asked n then counts about once in all)
      double flows = weight / (tag / scale);   // a flow that asked n in all counts about once
      requests += weight * scale;
      perFlow += flows * scale;
      counters.flows(priority, flows, (long) memoryNanos, now);
      double typical = requests / perFlow;
      floor = Math.max(floor, LIGHT * typical * scale);   // never back: light flows keep arrival order
      return Math.max(floor, tag);
    }

    void add(W w, int q) {
      w.fairQueue = q;
      w.fairSeq = seq++;
      w.tag = charge(w.flow, w.weight, w.since);
      occupancy[q]++;
      byTag.add(w);
      size++;
    }

    boolean remove(W w) {
      if (w.fairQueue < 0 || !byTag.remove(w)) {
        return false;
      }
      occupancy[w.fairQueue]--;
      size--;
      return true;
    }

    /** The live waiter with the smallest tag among those {@code servable} accepts. */
    W next(Predicate<W> servable) {
      W best = null;
      if (servable == null) {
        for (W w = byTag.peek(); w != null; w = byTag.peek()) {
          if (!w.future().isDone()) {
            best = w;
            break;
          }
          WaitQueues.this.remove(w);
        }
      } else {
        List<W> left = null;
        for (W w : byTag) {
          if (w.future().isDone()) {
            if (left == null) {
              left = new ArrayList<>(2);
            }
            left.add(w);
          } else if (servable.test(w) && (best == null || w.tag < best.tag
              || (w.tag == best.tag && w.fairSeq < best.fairSeq))) {
            best = w;
          }
        }
        if (left != null) {
          left.forEach(WaitQueues.this::remove);
        }
      }
      return best;
    }

    /** The waiter to refuse for room: the latest-tagged of the most occupied queue. */
    W latestOfFullest() {
      int fullest = 0;
      for (int q = 1; q < occupancy.length; q++) {
        if (occupancy[q] > occupancy[fullest]) {
          fullest = q;
        }
      }
      W last = null;
      for (W w : byTag) {
        if (w.fairQueue == fullest && (last == null || w.tag > last.tag
            || (w.tag == last.tag && w.fairSeq > last.fairSeq))) {
          last = w;
        }
      }
      return last;
    }
  }

  /** A flow is light while its demand is at most this many times the typical request's flow's. */
  static final double LIGHT = 3;
  /** How far a level's units grow (e^40) before they are rebased. */
  private static final double REBASE = Math.exp(40);

  /** The fair level of priority {@code p}, made at its first use (at {@code now}). */
  private FairLevel level(int p, long now) {
    FairLevel l = fair[p];
    if (l == null) {
      l = new FairLevel(fairQueuing.queues(), p, now);
      fair[p] = l;
    }
    return l;
  }

  /**
   * Under fair queuing, counts a grant made at once (nobody waiting ahead) in its flow's demand,
   * so that a flow's precedence when waits begin reflects what it has been taking; a no-op
   * without fair queuing, or before the priority's queues first had a waiter (their memory is
   * made then).
   */
  void granted(String flow, int p, int weight, long now) {
    if (fair != null && fair[p] != null) {
      fair[p].charge(flow, weight, now);
    }
  }

  /** Waiters now. */
  int size() {
    return count;
  }

  /** Whether anyone waits at priority {@code p} or above. */
  boolean atOrAbove(int p) {
    for (int i = 0; i <= p; i++) {
      if (levelSize(i) > 0) {
        return true;
      }
    }
    return false;
  }

  private int levelSize(int p) {
    return fair != null ? (fair[p] == null ? 0 : fair[p].size) : queues[p].size();
  }

  /**
   * Whether {@code w} would find room: under fair queuing, whether the shortest queue of its
   * flow's hand has room (the total bound is the limiter's); always true without.
   */
  boolean hasRoomFor(W w) {
    return fair == null || fair[w.priority()] == null
        || fair[w.priority()].choose(w.flow) >= 0;
  }

  /** The waiters of priority {@code p} and above: those served before a newcomer of {@code p}. */
  int sizeAtOrAbove(int p) {
    int n = 0;
    for (int i = 0; i <= p; i++) {
      n += levelSize(i);
    }
    return n;
  }

  /**
   * Adds {@code w}; under fair queuing to the shortest queue of its flow's hand, false (and not
   * added) when that queue is full ({@link #hasRoomFor}).
   */
  boolean add(W w) {
    if (fair != null) {
      FairLevel level = level(w.priority(), w.since);
      int q = level.choose(w.flow);
      if (q < 0) {
        return false;
      }
      level.add(w, q);
    } else {
      queues[w.priority()].addLast(w);
    }
    count++;
    total.incrementAndGet();
    counters.waitingAt[w.priority()].incrementAndGet();
    return true;
  }

  /** Removes {@code w}; false if it was not waiting. */
  boolean remove(W w) {
    if (fair != null ? fair[w.priority()] != null && fair[w.priority()].remove(w)
        : queues[w.priority()].remove(w)) {
      count--;
      total.decrementAndGet();
      counters.waitingAt[w.priority()].decrementAndGet();
      if (count == 0) {
        drained();
      }
      return true;
    }
    return false;
  }

  /** CoDel ends with the standing queue: an empty queue starts measuring afresh. */
  private void drained() {
    shedding = false;
    firstAbove = NONE;
  }

  /** Whether CoDel is shedding now: an acquisition that would wait is refused instead. */
  boolean shedding() {
    return shedding;
  }

  /**
   * CoDel's measure, taken as a waiter leaves the queue (served, asked for, or timed out) after
   * {@code sojournNanos}: a sojourn below the target ends any shedding; sojourns at or above it
   * for a whole interval start it. True when this waiter is to be refused
   * ({@link Refusal#OVERLOADED}) rather than served. Always false with CoDel off.
   */
  boolean shedOnDequeue(long sojournNanos, long now) {
    if (codelTarget == 0) {
      return false;
    }
    if (sojournNanos < codelTarget) {
      firstAbove = NONE;
      shedding = false;
      return false;
    }
    if (shedding) {
      return true;
    }
    if (firstAbove == NONE) {
      firstAbove = now + codelInterval;
      return false;
    }
    if (now - firstAbove >= 0) {
      shedding = true;
      return true;
    }
    return false;
  }

  /** The next waiter of priority {@code p} to serve (those that left are dropped); null if none. */
  W next(int p) {
    if (fair != null) {
      return fair[p] == null ? null : fair[p].next(null);
    }
    ArrayDeque<W> queue = queues[p];
    while (!queue.isEmpty()) {
      W w = order == QueueOrder.LIFO ? queue.peekLast() : queue.peekFirst();
      if (!w.future().isDone()) {
        return w;
      }
      remove(w);
    }
    return null;
  }

  /**
   * Whether a waiter that {@code servable} says the limit of now can serve waits at or above
   * priority {@code p}: one whose weight is above its priority's share of an adaptive limit as it
   * is now waits for the limit to grow and holds up nobody meanwhile.
   */
  boolean atOrAbove(int p, Predicate<W> servable) {
    for (int i = 0; i <= p; i++) {
      if (next(i, servable) != null) {
        return true;
      }
    }
    return false;
  }

  /**
   * The next waiter of priority {@code p} to serve among those {@code servable} accepts (those
   * that left are dropped; the others keep their place); null if none.
   */
  W next(int p, Predicate<W> servable) {
    if (fair != null) {
      return fair[p] == null ? null : fair[p].next(servable);
    }
    W found = null;
    List<W> left = null;
    Iterator<W> it = order == QueueOrder.LIFO ? queues[p].descendingIterator()
        : queues[p].iterator();
    while (it.hasNext()) {
      W w = it.next();
      if (w.future().isDone()) {
        if (left == null) {
          left = new ArrayList<>(2);
        }
        left.add(w);
      } else if (servable.test(w)) {
        found = w;
        break;
      }
    }
    if (left != null) {
      left.forEach(this::remove);
    }
    return found;
  }

  /** The next waiter {@code servable} accepts, highest priority first; null if none. */
  W next(Predicate<W> servable) {
    for (int p = 0; p < PRIORITIES; p++) {
      W w = next(p, servable);
      if (w != null) {
        return w;
      }
    }
    return null;
  }

  /** The next waiter to serve, highest priority first; null if none. */
  W next() {
    for (int p = 0; p < PRIORITIES; p++) {
      W w = next(p);
      if (w != null) {
        return w;
      }
    }
    return null;
  }

  /**
   * Makes room for a newcomer of priority {@code p} in a full queue: removes and returns the
   * waiter to refuse ({@code QUEUE_FULL}), the oldest of the lowest priority below {@code p}, or
   * with LIFO the oldest of {@code p} itself; null if none may go (the newcomer is refused).
   */
  W evictFor(int p) {
    for (int i = PRIORITIES - 1; i >= p; i--) {
      if (fair != null) {
        if (i == p || fair[i] == null || fair[i].size == 0) {
          continue;
        }
        W last = fair[i].latestOfFullest();   // a lower priority's flood gives way first
        remove(last);
        return last;
      }
      if (queues[i].isEmpty() || (i == p && order != QueueOrder.LIFO)) {
        continue;
      }
      W oldest = queues[i].peekFirst();
      remove(oldest);
      return oldest;
    }
    return null;
  }

  /** Removes every waiter and returns them. */
  List<W> clear() {
    List<W> all = new ArrayList<>(count);
    for (ArrayDeque<W> queue : queues) {
      all.addAll(queue);
      queue.clear();
    }
    if (fair != null) {
      for (FairLevel level : fair) {
        if (level == null) {
          continue;
        }
        all.addAll(level.byTag);
        level.byTag.clear();
        Arrays.fill(level.occupancy, 0);
        level.size = 0;
      }
    }
    total.addAndGet(-count);
    for (W w : all) {
      counters.waitingAt[w.priority()].decrementAndGet();
    }
    count = 0;
    drained();
    return all;
  }
}
