"""The ground floor: leaf helpers every layer may use (errors, paths, sizes, waits, signals,
console, argument parsing). Nothing here imports from another farm package; errors.py ships to
hosts with the agent (farm/pool/deploy.py BUNDLE_PATHS).
"""
