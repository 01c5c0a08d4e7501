"""The library's version, in a module of its own: the modules that record it import it from here, not from the
package (an import of the package from inside it was a circle)."""

__version__ = "0.2.0"
