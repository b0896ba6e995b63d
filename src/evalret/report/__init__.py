"""Renderers of a finished evaluation: terminal tables and report files."""
