// publisher / subscriber: reading from the join point, coroutine and
// blocking readers, several subscribers, the three lagging behaviours, the
// kept window, kick, copies, ranges, and a reader thread.
#include <cocls/async.h>
#include <cocls/future.h>
#include <cocls/publisher.h>

#include <string>
#include <thread>
#include <vector>

#include "check.h"

using namespace cocls;

// Everything `s` can read without waiting, then whether the stream ended.
static std::string drain(subscriber<int> &s) {
    std::string out;
    while (s.next_ready()) out += std::to_string(s.value()) + ' ';
    return out;
}

static void a_subscriber_reads_what_is_published_after_it_joined() {
    publisher<int> pub;
    pub.publish(1);
    subscriber<int> s(pub);
    CHECK_EQ(s.position(), 1u);
    CHECK(!s.next_ready());
    pub.publish(2);
    pub.publish(3);
    CHECK(s.next());  // blocking form; a value is there
    CHECK_EQ(s.value(), 2);
    CHECK_EQ(s.position(), 2u);
    CHECK(s.next());
    CHECK_EQ(s.value(), 3);
    CHECK(!s.next_ready());
    pub.close();
    CHECK(!s.next());  // the end
    pub.publish(4);    // nothing happens once closed
    CHECK(!s.next());
}

static async<void> reader(subscriber<int> &s, std::string &out) {
    for (;;) {
        // Not `while (co_await s.next())`: g++ 12 miscompiles a co_await used
        // directly as a condition (the body is skipped).
        bool more = co_await s.next();
        if (!more) break;
        out += std::to_string(s.value()) + ' ';
    }
    out += "end";
}

static void coroutine_subscribers_get_every_value_then_the_end() {
    publisher<int> pub;
    subscriber<int> s1(pub), s2(pub);
    std::string o1, o2;
    future<void> f1 = reader(s1, o1).start();
    future<void> f2 = reader(s2, o2).start();
    pub.publish(1);  // normal mode: both readers run here
    CHECK_EQ(o1, std::string("1 "));
    CHECK_EQ(o2, std::string("1 "));
    std::vector<int> more = {2, 3};
    pub.publish(more.begin(), more.end());
    pub.close();
    CHECK(f1.ready() && f2.ready());
    CHECK_EQ(o1, std::string("1 2 3 end"));
    CHECK_EQ(o2, std::string("1 2 3 end"));
}

static void lagging_subscribers_end_skip_or_jump_to_the_newest() {
    publisher<int> pub(3);  // keeps 3 values at most
    subscriber<int> all(pub), skip(pub, subscribtion_type::skip_if_behind),
        recent(pub, subscribtion_type::skip_to_recent);
    for (int i = 1; i <= 5; i++) pub.publish(i);
    CHECK(!all.next_ready());
    CHECK(!all.next());  // its next value (1) is gone: dropped, without waiting
    CHECK_EQ(drain(skip), std::string("3 4 5 "));
    CHECK_EQ(drain(recent), std::string("5 "));
    pub.publish(6);
    pub.publish(7);
    CHECK_EQ(drain(skip), std::string("6 7 "));
    CHECK_EQ(drain(recent), std::string("7 "));
}

static void without_a_limit_the_slowest_subscriber_loses_nothing() {
    publisher<int> pub;
    subscriber<int> slow(pub);
    for (int i = 1; i <= 100; i++) pub.publish(i);
    int expect = 1;
    while (slow.next_ready()) CHECK_EQ(slow.value(), expect++);
    CHECK_EQ(expect, 101);
}

static void the_minimal_window_lets_a_late_subscriber_catch_up() {
    publisher<int> pub(10, 3);  // nobody subscribed: 3 values are kept anyway
    for (int i = 1; i <= 5; i++) pub.publish(i);
    subscriber<int> late(pub, 2);
    CHECK_EQ(drain(late), std::string("3 4 5 "));
    subscriber<int> too_late(pub, 0);  // value 1 is gone
    CHECK(!too_late.next());
    subscriber<int> copy_of_late_start(pub, 2);
    CHECK(copy_of_late_start.next());
    CHECK_EQ(copy_of_late_start.value(), 3);
    subscriber<int> copy(copy_of_late_start);  // same position: reads 4 next
    CHECK_EQ(copy.position(), 3u);
    CHECK_EQ(drain(copy), std::string("4 5 "));
    CHECK_EQ(drain(copy_of_late_start), std::string("4 5 "));
}

static void kick_ends_a_waiting_subscriber() {
    publisher<int> pub;
    subscriber<int> a(pub), b(pub);
    std::string oa, ob;
    future<void> fa = reader(a, oa).start();
    future<void> fb = reader(b, ob).start();
    pub.kick(&a);
    CHECK(fa.ready());
    CHECK_EQ(oa, std::string("end"));
    pub.publish(1);
    CHECK_EQ(ob, std::string("1 "));
    std::thread t([&] { b.kick_me(); });  // from another thread
    t.join();
    CHECK(fb.ready());
    CHECK_EQ(ob, std::string("1 end"));
    CHECK_EQ(oa, std::string("end"));  // a got nothing after its kick
}

static void a_reader_thread_iterates_until_the_stream_ends() {
    constexpr long n = 20000;
    long sum = 0, count = 0;
    publisher<long> pub;
    subscriber<long> s(pub);  // joined before the first value, handed to the thread
    std::thread t([&] {
        for (long v : s) {  // blocks between values; ends when the stream does
            sum += v;
            count++;
        }
    });
    for (long i = 1; i <= n; i++) pub.publish(i);
    pub.close();
    t.join();
    CHECK_EQ(count, n);
    CHECK_EQ(sum, n * (n + 1) / 2);
    CHECK_EQ(s.position(), std::size_t(n));
}

int main() {
    RUN(a_subscriber_reads_what_is_published_after_it_joined);
    RUN(coroutine_subscribers_get_every_value_then_the_end);
    RUN(lagging_subscribers_end_skip_or_jump_to_the_newest);
    RUN(without_a_limit_the_slowest_subscriber_loses_nothing);
    RUN(the_minimal_window_lets_a_late_subscriber_catch_up);
    RUN(kick_ends_a_waiting_subscriber);
    RUN(a_reader_thread_iterates_until_the_stream_ends);
    return 0;
}
