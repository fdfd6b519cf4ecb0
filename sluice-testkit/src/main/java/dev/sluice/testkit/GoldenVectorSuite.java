package dev.sluice.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.Observation;
import dev.sluice.spi.StoreRequest;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Replays {@link GoldenVectors} straight into a store's script or function: each vector's state
 * is written under a fresh key, the operation applied at the vector's instant, and the state the
 * store then holds must equal core's, slot for slot (the "none" marker of scripts read as
 * {@link StoreRequest#NONE}). A store module extends this class.
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public abstract class GoldenVectorSuite {
  /** For a store's test class, which extends this one. */
  protected GoldenVectorSuite() {}

  /**
   * How many vectors each store replays: 5,000 by default, 20,000 with {@code -Pthorough}
   * ({@code -Dsluice.golden.vectors}); the smaller set is the first part of the larger.
   */
  protected static final int VECTORS = vectors();

  private static int vectors() {
    int n = Integer.getInteger("sluice.golden.vectors", 5_000);
    if (n < 4) {
      throw new IllegalArgumentException("sluice.golden.vectors must be at least 4 but was " + n);
    }
    return n;
  }

  /** Writes a key's stored state under this layout; {@code state} null deletes the key. */
  protected abstract void put(String key, String layout, long[] state);

  /** Applies the request through the store's script with the store's clock reading {@code now}. */
  protected abstract Observation apply(String key, StoreRequest request, long now);

  /** The key's stored state if stored under this layout, else null. */
  protected abstract long[] get(String key, String layout);

  /**
   * Writes the stored state of {@code key} in {@code group}, or of the group's parent when
   * {@code key} is null, under this layout; {@code state} null deletes it.
   */
  protected abstract void putGroupState(String group, String key, String layout, long[] state);

  /** The stored state of {@code key} in {@code group} (or its parent) if of this layout, else null. */
  protected abstract long[] getGroupState(String group, String key, String layout);

  /** Applies a group's request with the store's clock reading {@code now}. */
  protected abstract Observation applyGroup(String group, String key, StoreRequest request,
      long now);

  /** How many group vectors each store replays: a quarter of {@link #VECTORS}. */
  protected static final int GROUP_VECTORS = VECTORS / 4;

  @Test
  public void everyGroupGoldenVector_leavesTheKeyAndTheParentAsCoreComputes() {
    List<GoldenVectors.GroupVector> vectors =
        GoldenVectors.groups(ticksPerSecond(), GROUP_VECTORS, 2026_11_24L);
    String run = "golden-group:" + System.nanoTime() + ":";
    for (GoldenVectors.GroupVector v : vectors) {
      String group = run + v.index();
      String key = "k";
      StoreRequest request = v.reference().request(v.operation(), v.cost());
      putGroupState(group, key, request.keyLayout(), v.keyState());
      putGroupState(group, null, request.groupLayout(), v.parentState());
      Observation seen = applyGroup(group, key, request, v.now());
      assertThat(seen.now()).as("%s: clock", v).isEqualTo(v.now());
      assertThat(seen.normalizedState()).as("%s: state seen", v).containsExactly(v.stateBefore());
      long[] keyKept = getGroupState(group, key, request.keyLayout());
      long[] parentKept = getGroupState(group, null, request.groupLayout());
      if (v.expectedKey() == null) {
        assertThat(keyKept).as("%s: key deleted or never written", v).isNull();
      } else {
        assertThat(keyKept).as("%s: key written", v).isNotNull();
        assertThat(normalized(keyKept)).as("%s: key written", v).containsExactly(v.expectedKey());
      }
      if (v.expectedParent() == null) {
        assertThat(parentKept).as("%s: parent deleted or never written", v).isNull();
      } else {
        assertThat(parentKept).as("%s: parent written", v).isNotNull();
        assertThat(normalized(parentKept)).as("%s: parent written", v)
            .containsExactly(v.expectedParent());
      }
      putGroupState(group, key, request.keyLayout(), null);
      putGroupState(group, null, request.groupLayout(), null);
    }
  }

  /** The store's clock resolution. */
  protected long ticksPerSecond() {
    return 1_000_000L;
  }

  @Test
  public void everyGoldenVector_leavesTheStateCoreComputes_bitForBit() {
    List<GoldenVectors.Vector> vectors = GoldenVectors.generate(ticksPerSecond(), VECTORS, 2026_11_23L);
    String run = "golden:" + System.nanoTime() + ":";
    for (GoldenVectors.Vector v : vectors) {
      String key = run + v.index();
      String layout = v.reference().layout();
      put(key, layout, v.state());
      StoreRequest request = v.reference().request(v.operation(), v.cost(), v.count());
      Observation seen = apply(key, request, v.now());
      assertThat(seen.now()).as("%s: clock", v).isEqualTo(v.now());
      long[] before = v.state() == null ? v.reference().initialState() : v.state();
      assertThat(seen.normalizedState()).as("%s: state seen", v).containsExactly(before);
      long[] kept = get(key, layout);
      if (v.expected() == null) {
        assertThat(kept).as("%s: key deleted or never written", v).isNull();
      } else {
        assertThat(kept).as("%s: state written", v).isNotNull();
        assertThat(normalized(kept)).as("%s: state written", v).containsExactly(v.expected());
      }
      put(key, layout, null);   // leave the store as it was
    }
  }

  private static long[] normalized(long[] state) {
    return new Observation(0, state).normalizedState();
  }
}
