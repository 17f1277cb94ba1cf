// generator_iterator: an input iterator over a generator, for range-for.
// There is one position, the generator's: begin() runs the first step,
// ++ the next one (synchronously: for an asynchronous generator the thread
// blocks until the value comes), * reads the current value.
#ifndef COCLS_ITERATOR_H_INCLUDED
#define COCLS_ITERATOR_H_INCLUDED

#include <cstddef>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

namespace cocls {

template <typename Generator>
class generator_iterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = std::remove_reference_t<decltype(std::declval<Generator &>().value())>;
    using difference_type = std::ptrdiff_t;
    using pointer = value_type *;
    using reference = value_type &;

    /// An iterator at the current position: `has_value` says whether the
    /// generator holds a value (false: the end).
    generator_iterator(Generator &gen, bool has_value) noexcept : m_gen(std::addressof(gen)), m_has_value(has_value) {}
    /// Runs the next step and stands on its value.
    explicit generator_iterator(Generator &gen) : m_gen(std::addressof(gen)), m_has_value(gen.next()) {}

    /// Equal when over the same generator and both at a value or both at the end.
    bool operator==(const generator_iterator &other) const noexcept {
        return m_gen == other.m_gen && m_has_value == other.m_has_value;
    }

    /// The current value (valid until the next step); rethrows what the
    /// generator threw.
    reference operator*() const { return m_gen->value(); }
    pointer operator->() const { return std::addressof(m_gen->value()); }

    /// Runs the next step (blocks until it ends).
    generator_iterator &operator++() {
        m_has_value = m_gen->next();
        return *this;
    }

    /// What `it++` returns: the value it stood on, moved out.
    class holder {
    public:
        explicit holder(value_type &&v) : m_value(std::move(v)) {}
        reference operator*() noexcept { return m_value; }
        pointer operator->() noexcept { return std::addressof(m_value); }

    private:
        value_type m_value;
    };
    holder operator++(int) {
        holder h(std::move(m_gen->value()));
        ++*this;
        return h;
    }

private:
    Generator *m_gen;
    bool m_has_value;
};

}  // namespace cocls

#endif
