package dev.sluice.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.Group;
import dev.sluice.Limit;
import dev.sluice.Rate;
import dev.sluice.RateLimiter;
import dev.sluice.Sluice;
import dev.sluice.testkit.GroupSuite;
import dev.sluice.testkit.LimiterFactory;
import dev.sluice.testkit.ManualClock;
import io.lettuce.core.cluster.SlotHash;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The group suite on a real three-master Redis Cluster: a group's parent and its keys share the
 * group's hash tag, so one script call never crosses slots and one group lives on one node.
 */
class RedisClusterGroupTest extends GroupSuite {
  @Override
  protected LimiterFactory factory() {
    return RedisClusterConformanceTest.clusterFactory();
  }

  @Test
  void aGroupsKeysShareItsSlot_whateverTheNames_andGroupsSpreadOverSlots() {
    RedisStore store = RedisClusterConformanceTest.store("g:", new ManualClock());
    Set<Integer> slots = new HashSet<>();
    for (String group : new String[] {"tenant-1", "a}b", "}x", "{y}", "x{", "ümlaut"}) {
      int slot = SlotHash.getSlot(store.parentKey(group));
      for (String key : new String[] {"k", "}", "{", "user:42", "a}b"}) {
        assertThat(SlotHash.getSlot(store.memberKey(group, key))).as("%s in %s", key, group)
            .isEqualTo(slot);
      }
    }
    RateLimiter l = Sluice.builder()
        .group(Group.sharing(Limit.leakyBucket(2, Rate.perSecond(1)))
            .assured(Limit.leakyBucket(1, Rate.perSecond(1)))
            .by(key -> key.substring(0, key.indexOf('/'))))
        .store(store).build();
    for (int i = 0; i < 200; i++) {
      String group = "tenant-" + i;
      slots.add(SlotHash.getSlot(store.parentKey(group)));
      assertThat(l.tryAcquire(group + "/a").isAllowed()).isTrue();
      assertThat(l.tryAcquire(group + "/b").isAllowed()).as("b's assured 1 fills the parent's 2").isTrue();
      assertThat(l.tryAcquire(group + "/c").isAllowed()).isFalse();
      assertThat(l.stats().storeErrors()).isZero();
    }
    assertThat(slots.size()).as("groups spread over many slots").isGreaterThan(150);
  }
}
