"""scripts/latency_floor.py at a subset of its points (the empty decode is issue 11's fixed cost): python .ab/floor.py OUT"""
import sys
sys.path.insert(0, "scripts")
import latency_floor as L
L.POINTS = [(1, 8192), (8, 4096), (8, 8192), (1, 32768), (8, 32768), (32, 8192)]
raise SystemExit(L.main(sys.argv[1]))
