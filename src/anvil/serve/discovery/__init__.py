"""Stateless discovery of a large served surface: a lexical search index over the approved tools (built once
per bundle or fleet at start-up, filtered per caller by its grants), and the chains that say which tools'
answers supply another tool's required inputs, so an agent can go from a search to a call without guessing."""
