package dev.sluice;

import java.util.ArrayList;
import java.util.List;

/**
 * Every public figure of a decision and of each of its limits' decisions, as one list: two
 * decisions are the same to a caller exactly when these lists are equal. Cheaper than a
 * recursive comparison of fields, and blind to how a decision keeps them (the in-memory meter's
 * subclass computes its per-limit figures when asked).
 */
final class DecisionFigures {
  private DecisionFigures() {}

  static List<Object> of(Decision d) {
    List<Object> out = new ArrayList<>(own(d));
    List<Decision> perLimit = d.perLimit();
    out.add(perLimit.size());
    if (perLimit.size() > 1) {
      for (Decision p : perLimit) {
        out.addAll(own(p));
      }
    }
    return out;
  }

  /** The figures of the decision itself. */
  static List<Object> own(Decision d) {
    return List.of(d.isAllowed(), d.reachedCapacity(), d.remaining(), d.retryAfterNanos(),
        d.resetAfterNanos(), d.delayNanos(), d.limit(), d.isDegraded(), d.isLeased(),
        d.isBorrowed(), d.isUnavailable());
  }
}
